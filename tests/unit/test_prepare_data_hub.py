"""Data preparation from the Hugging Face hub: choosing a split's file, the
download, and the message when the network is down.

Offline and fast: hub access is replaced by monkeypatched functions.
"""

from __future__ import annotations

import json

import pytest

from memagent_workflow.data import hub
from tests.unit.test_prepare_data import memagent_row, run_cli, write_parquet

# --------------------------------------------------------------------- HF hub


def test_hf_path_converts_the_downloaded_parquet(tmp_path, monkeypatch, capsys):
    local = write_parquet(
        tmp_path / "hotpotqa_dev.parquet", [memagent_row(0), memagent_row(1)]
    )
    calls = []

    def fake_fetch(repo_id, split, revision):
        calls.append((repo_id, split, revision))
        return local

    monkeypatch.setattr(hub, "download_split", fake_fetch)
    out = tmp_path / "dev.jsonl"
    code, err = run_cli(
        capsys, "--hf-dataset", "org/hotpotqa", "--hf-split", "dev", "--output", out
    )
    assert code == 0, err
    assert calls == [("org/hotpotqa", "dev", None)]
    assert "--hf-split dev: using hotpotqa_dev.parquet of org/hotpotqa" in err
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [
        "0",
        "1",
    ]


def test_hub_files_are_chosen_by_split_word():
    names = [
        "README.md",
        "hotpotqa_train_32k.parquet",
        "hotpotqa_dev.parquet",
        "eval_200.json",
        "x/dev_notes.txt",
    ]
    assert hub.split_files(names, "train") == ["hotpotqa_train_32k.parquet"]
    assert hub.split_files(names, "dev") == ["hotpotqa_dev.parquet"]
    assert hub.split_files(names, "eval_200") == ["eval_200.json"]
    assert hub.split_files(["device.json", "hotpotqa_devset.json"], "dev") == []


def test_a_split_must_pick_exactly_one_file():
    names = ["hotpotqa_train_32k.parquet", "hotpotqa_dev.parquet"]
    assert hub.split_file(names, "train") == "hotpotqa_train_32k.parquet"
    with pytest.raises(
        hub.HubError, match="2 files match the split 'train'.*--hf-file"
    ):
        hub.split_file([*names, "hotpotqa_train_full.json"], "train")


def test_fetch_hub_files_downloads_the_matching_files(tmp_path, monkeypatch):
    import huggingface_hub

    downloads = []

    def fake_download(repo_id, filename, repo_type, revision, local_dir):
        downloads.append((repo_id, filename, repo_type))
        return str(tmp_path / filename)

    monkeypatch.setattr(
        huggingface_hub.HfApi,
        "list_repo_files",
        lambda self, repo_id, repo_type, revision: [
            "hotpotqa_dev.parquet",
            "hotpotqa_train_32k.parquet",
        ],
    )
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    assert hub.download_split("org/hq", "train") == (
        tmp_path / "hotpotqa_train_32k.parquet"
    )
    assert downloads == [("org/hq", "hotpotqa_train_32k.parquet", "dataset")]
    with pytest.raises(
        hub.HubError,
        match="no .parquet/.jsonl/.json file whose name contains 'test'",
    ):
        hub.download_split("org/hq", "test")


def test_network_failure_gives_a_clear_message_and_exit_1(
    tmp_path, monkeypatch, capsys
):
    import huggingface_hub

    def offline(self, repo_id, repo_type, revision):
        raise ConnectionError("Name or service not known")

    monkeypatch.setattr(huggingface_hub.HfApi, "list_repo_files", offline)
    out = tmp_path / "train.jsonl"
    code, err = run_cli(capsys, "--hf-dataset", "org/hq", "--output", out)
    assert code == 1 and "Traceback" not in err
    assert "could not download the file list of dataset 'org/hq'" in err
    assert "ConnectionError: Name or service not known" in err
    assert list(tmp_path.iterdir()) == []

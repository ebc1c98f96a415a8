"""Offline tests for RULER-HQA eval data: the status report, the pinned download
from the hub (served from a local folder) and its expansion, and their CLI."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from examples import prepare_eval_data as cli
from memagent_workflow.data import hub as hub_module
from memagent_workflow.eval import fetch, sets
from memagent_workflow.eval.sets import EvalDataError
from tests.unit.test_prepare_eval_data import fake_hotpot, good_sample, write_json

# ---------------------------------------------------- status and download


def test_status_and_report_cli(tmp_path: Path, capsys) -> None:
    root = tmp_path / "ruler"
    assert sets.eval_file(root, 50) == root / "eval_50.json"
    assert fetch.status(root, [50, 100]) == {50: None, 100: None}
    assert cli.main(["--data-root", str(root), "--lengths", "50,100"]) == 1
    assert "0 present, 2 missing" in capsys.readouterr().out
    root.mkdir()
    write_json(sets.eval_file(root, 50), [good_sample()])
    assert fetch.status(root, [50, 100]) == {50: root / "eval_50.json", 100: None}
    assert cli.main(["--data-root", str(root), "--lengths", "50 100"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"eval_50\.json\s+present", out)
    assert re.search(r"eval_100\.json\s+missing", out)
    assert cli.main(["--data-root", str(root), "--lengths", "50"]) == 0
    assert cli.main(["--data-root", str(root), "--lengths", "50 x"]) == 2


INDEX_ONLY = [{"context": [3, 0], "input": "Q?", "answers": ["A"], "num_docs": 2,
               "index": 0}]  # fmt: skip


@pytest.fixture
def fake_hub(tmp_path: Path, monkeypatch) -> list[tuple]:
    """Serve hub files from a local folder (no network); record the requests."""
    hub = tmp_path / "hub"
    hub.mkdir()
    write_json(hub / "eval_50.json", [{"input": "Q", "context": "c", "answers": ["A"],
                                       "num_docs": 50, "index": 0}])  # fmt: skip
    write_json(hub / "eval_100.json", [good_sample()])
    write_json(hub / "eval_12800.json", INDEX_ONLY)
    write_json(hub / "eval_400.json", [good_sample(answers=[])])  # broken on the hub
    calls: list[tuple] = []

    def fetch(repo_id: str, filename: str, local_dir: Path, revision=None) -> Path:
        assert repo_id == "BytedTsinghua-SIA/hotpotqa"
        calls.append((filename, revision))
        Path(local_dir).mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy(hub / filename, Path(local_dir) / filename))

    def resolve(repo_id: str, revision: str) -> str:
        calls.append(("resolve", revision))
        return "c0ffee" + revision

    monkeypatch.setattr(hub_module, "download_file", fetch)
    monkeypatch.setattr(hub_module, "resolve_revision", resolve)
    monkeypatch.setattr(
        hub_module, "list_files", lambda repo_id, rev: [p.name for p in hub.iterdir()]
    )
    return calls


def test_download_is_pinned_and_takes_what_the_hub_holds(tmp_path, fake_hub) -> None:
    root = tmp_path / "data"
    r = fetch.download(root, [50, 100, 12800, 25600], revision="v1")
    assert fake_hub == [
        ("resolve", "v1"),
        ("eval_50.json", "c0ffeev1"),  # every file at the resolved commit
        ("eval_100.json", "c0ffeev1"),
        ("eval_12800.json", "c0ffeev1"),
    ]
    assert r["commit"] == "c0ffeev1" and r["not_on_hub"] == [25600]
    assert r["written"] == [root / f"eval_{n}.json" for n in (50, 100, 12800)]
    assert r["index_only"] == [root / "eval_12800.json"]  # no --source: kept
    assert (root / "eval_50.json").read_bytes() == (
        tmp_path / "hub" / "eval_50.json"
    ).read_bytes()
    manifest = json.loads((root / "hub_download.json").read_text())
    assert manifest["eval_12800.json"]["commit"] == "c0ffeev1"
    assert manifest["eval_12800.json"]["index_only"] is True
    fake_hub.clear()
    assert fetch.download(root, [50], revision="v1")["skipped"] == [
        root / "eval_50.json"
    ]
    assert fetch.download(root, [50], force=True)["written"] == [root / "eval_50.json"]
    with pytest.raises(EvalDataError, match="eval_400.json.*'answers'"):
        fetch.download(root, [400])
    assert not (root / "eval_400.json").exists()


def test_download_expands_index_only_files_with_a_source(tmp_path, fake_hub) -> None:
    dev = write_json(tmp_path / "dev.json", fake_hotpot()[:1])  # 10 paragraphs
    r = fetch.download(tmp_path / "data", [12800], source=dev)
    (sample,) = sets.load_eval_file(r["written"][0])
    pool = sorted(
        f"Title 0-{p}\nFact 0.{p} first. Fact 0.{p} second." for p in range(10)
    )
    assert sample["context"] == f"Document 1:\n{pool[3]}\n\nDocument 2:\n{pool[0]}"
    assert r["index_only"] == []


def test_download_cli(tmp_path: Path, fake_hub: list, capsys) -> None:
    root = str(tmp_path / "data")
    argv = ["--data-root", root, "--download", "--revision", "v2"]
    assert cli.main([*argv, "--lengths", "50 100 12800 25600"]) == 1  # 25600 absent
    out = capsys.readouterr().out
    assert "at revision v2 = commit c0ffeev2" in out
    assert "not on the hub at this commit: eval_25600.json" in out
    assert "eval_12800.json holds document indices: expand it with --expand" in out
    assert re.search(r"eval_12800\.json\s+present .*index-only", out)
    assert "3 present, 1 missing" in out
    assert cli.main([*argv, "--lengths", "400"]) == 2
    err = capsys.readouterr().err
    assert "eval_400.json" in err and "'answers'" in err

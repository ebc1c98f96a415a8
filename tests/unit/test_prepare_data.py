"""Data preparation: loading, validation, atomic writes, synthetic data, CLI.

Offline and fast: hub access is replaced by monkeypatched functions.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from examples import prepare_data
from memagent_workflow.data import files, hub, synthetic
from memagent_workflow.data.files import DataError, read_records
from memagent_workflow.data.schema import check_rows
from memagent_workflow.data.training import training_rows


def convert_file(path):
    return list(training_rows([path]))


def convert_rows(rows, source):
    labelled = ((f"row {i} (0-based)", r) for i, r in enumerate(rows))
    return list(check_rows(labelled, source))


CONTEXT = "Document 1:\nAlpha\nAlpha was born in Beta.\n\nDocument 2:\nBeta\nBeta is in Gamma."


def memagent_row(index: int, question: str = "Where?", answer="Gamma") -> dict:
    """A row in the layout of the MemAgent HotpotQA parquet files."""
    return {
        "data_source": "hotpotqa",
        "prompt": [{"role": "user", "content": question}],
        "context": CONTEXT,
        "ability": "memory",
        "reward_model": {"style": "rule", "ground_truth": answer},
        "extra_info": {"index": index, "question": question, "num_docs": 2},
    }


def write_parquet(path: Path, rows: list[dict]) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def good(i: int) -> dict:
    return {"id": f"q{i}", "question": "Where?", "context": CONTEXT, "answers": ["x"]}


def run_cli(capsys, *argv) -> tuple[int, str]:
    code = prepare_data.main([str(a) for a in argv])
    return code, capsys.readouterr().err


# ----------------------------------------------------------------- conversion


def test_parquet_in_memagent_layout_converts(tmp_path):
    src = write_parquet(
        tmp_path / "hotpotqa_dev.parquet",
        [
            memagent_row(7, "Who?", ["Gamma"]),
            memagent_row(9, "When?", ["1900", "c. 1900"]),
        ],
    )
    assert convert_file(src) == [
        {"id": "7", "question": "Who?", "context": CONTEXT, "answers": ["Gamma"]},
        {
            "id": "9",
            "question": "When?",
            "context": CONTEXT,
            "answers": ["1900", "c. 1900"],
        },
    ]


def test_single_string_ground_truth_becomes_a_list():
    [row] = convert_rows([memagent_row(0, answer="Gamma")], "mem")
    assert row["answers"] == ["Gamma"]


def test_jsonl_of_converted_rows_round_trips(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", [good(0), good(1)])
    assert convert_file(src) == [good(0), good(1)]


def test_ruler_eval_json_list_uses_input_and_index(tmp_path):
    rows = [
        {"input": "Q?", "context": CONTEXT, "answers": ["a"], "num_docs": 2, "index": 5}
    ]
    src = tmp_path / "eval_50.json"
    src.write_text(json.dumps(rows), encoding="utf-8")
    assert convert_file(src) == [
        {"id": "5", "question": "Q?", "context": CONTEXT, "answers": ["a"]}
    ]


def test_id_falls_back_to_row_position():
    rows = [{"question": "Q?", "context": CONTEXT, "answers": ["a"]}] * 2
    assert [r["id"] for r in convert_rows(rows, "mem")] == ["0", "1"]


def test_limit_keeps_the_first_rows(tmp_path, capsys):
    src = write_jsonl(tmp_path / "in.jsonl", [good(i) for i in range(5)])
    out = tmp_path / "out.jsonl"
    code, _ = run_cli(capsys, "--input", src, "--output", out, "--limit", 2)
    assert code == 0
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [
        "q0",
        "q1",
    ]


# --------------------------------------------------------------------- errors

BAD_ROWS = [
    ({"question": "Q?", "answers": ["a"]}, "'context'", "missing"),
    (
        {"question": "Q?", "context": 3, "answers": ["a"]},
        "'context'",
        "expected a string",
    ),
    (
        {"question": "  ", "context": CONTEXT, "answers": ["a"]},
        "'question'",
        "expected a non-empty string",
    ),
    ({"context": CONTEXT, "answers": ["a"]}, "'prompt[0].content'", "missing"),
    ({"question": "Q?", "context": CONTEXT}, "'reward_model.ground_truth'", "missing"),
    (
        {"question": "Q?", "context": CONTEXT, "answers": []},
        "'answers'",
        "non-empty list",
    ),
    (
        {"question": "Q?", "context": CONTEXT, "answers": [1]},
        "'answers'",
        "non-empty list",
    ),
    (
        {**memagent_row(0), "reward_model": {"ground_truth": []}},
        "'reward_model.ground_truth'",
        "expected a non-empty list of non-empty strings, got []",
    ),
    ({**memagent_row(0), "prompt": [{"content": ""}]}, "'prompt[0].content'", "empty"),
]


@pytest.mark.parametrize(("bad", "field", "problem"), BAD_ROWS)
def test_bad_jsonl_row_names_file_line_and_field(tmp_path, bad, field, problem):
    src = write_jsonl(tmp_path / "train.jsonl", [good(0), good(1), bad])
    with pytest.raises(DataError) as err:
        convert_file(src)
    message = str(err.value)
    assert message.startswith(f"{src}: 1 bad row(s); nothing was written")
    assert f"\n  {src}: line 3" in message and ": field " in message
    assert field in message and problem in message


def test_blank_jsonl_lines_are_skipped_but_counted(tmp_path):
    src = tmp_path / "train.jsonl"
    src.write_text(json.dumps(good(0)) + "\n\n" + json.dumps({"question": "Q"}) + "\n")
    with pytest.raises(DataError, match=r"train\.jsonl: line 3: field 'context'"):
        convert_file(src)


def test_bad_json_line_reports_the_decoder_message(tmp_path):
    src = tmp_path / "train.jsonl"
    src.write_text(json.dumps(good(0)) + "\n{not json\n")
    with pytest.raises(DataError) as err:
        convert_file(src)
    assert f"{src}: line 2: field '(row)': invalid JSON: Expecting property name" in (
        str(err.value)
    )


def test_non_object_json_line_is_rejected(tmp_path):
    src = write_jsonl(tmp_path / "train.jsonl", [["a", "list"]])
    with pytest.raises(
        DataError, match=r"line 1: field '\(row\)': expected an object, got list"
    ):
        convert_file(src)


def test_duplicate_ids_name_both_rows(tmp_path):
    src = write_parquet(
        tmp_path / "t.parquet", [memagent_row(4), memagent_row(5), memagent_row(4)]
    )
    with pytest.raises(DataError) as err:
        convert_file(src)
    assert str(err.value) == (
        f"{src}: 1 bad row(s); nothing was written:\n  {src}: row 2 (0-based) (id '4'): "
        f"field 'id': duplicate '4' (first at {src}: row 0 (0-based))"
    )


def test_parquet_errors_use_zero_based_row_index(tmp_path):
    src = write_parquet(
        tmp_path / "t.parquet", [memagent_row(0), memagent_row(1, question="")]
    )
    with pytest.raises(
        DataError,
        match=r"t\.parquet: row 1 \(0-based\) \(id '1'\): field 'prompt\[0\]\.content': expected a non-empty string",
    ):
        convert_file(src)


def test_index_only_eval_context_is_rejected(tmp_path):
    src = tmp_path / "eval_25600.json"
    src.write_text(json.dumps([{"input": "Q", "context": [1, 2], "answers": ["a"]}]))
    with pytest.raises(
        DataError,
        match=r"item 0 \(0-based\): field 'context': is a list of document indices",
    ):
        convert_file(src)


def test_plain_dict_rows_are_labelled_by_position():
    with pytest.raises(DataError, match=r"\n  mem: row 1 \(0-based\): field 'context'"):
        convert_rows([good(0), {"question": "Q", "answers": ["a"]}], "mem")


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("missing.jsonl", "file not found"),
        ("training.csv", "unsupported file type '.csv'"),
    ],
)
def test_unreadable_inputs(tmp_path, name, problem):
    with pytest.raises(DataError, match=problem):
        list(read_records(tmp_path / name))


def test_corrupt_parquet(tmp_path):
    src = tmp_path / "t.parquet"
    src.write_bytes(b"not a parquet file")
    with pytest.raises(DataError, match="cannot read parquet"):
        convert_file(src)


# --------------------------------------------------------------- atomic write


def test_failed_conversion_leaves_no_output_and_no_temp_file(tmp_path, capsys):
    src = write_jsonl(tmp_path / "in.jsonl", [good(0), good(0)])
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    code, err = run_cli(capsys, "--input", src, "--output", out_dir / "train.jsonl")
    assert code == 2
    assert list(out_dir.iterdir()) == []
    assert err.splitlines()[-1] == (
        f"  {src}: line 2 (id 'q0'): field 'id': duplicate 'q0' (first at {src}: line 1)"
    )


def test_failed_conversion_keeps_the_previous_output(tmp_path, capsys):
    src = write_jsonl(tmp_path / "in.jsonl", [good(0), {"question": "Q"}])
    out = tmp_path / "train.jsonl"
    out.write_text("previous\n")
    code, err = run_cli(capsys, "--input", src, "--output", out)
    assert code == 2 and "Traceback" not in err
    assert f"{src}: line 2: field 'context': missing" in err
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "train.jsonl"]


def test_successful_write_replaces_the_previous_output(tmp_path):
    out = tmp_path / "train.jsonl"
    out.write_text("previous\n")
    assert files.write_jsonl(out, [good(0)]) == 1
    assert [json.loads(line) for line in out.read_text().splitlines()] == [good(0)]


def test_write_removes_temp_file_when_rows_raise(tmp_path):
    def rows():
        yield good(0)
        raise DataError("boom")

    with pytest.raises(DataError, match="boom"):
        files.write_jsonl(tmp_path / "x.jsonl", rows())
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ synthetic


def test_synthetic_file_is_deterministic_per_seed(tmp_path, capsys):
    def make(seed: int, name: str) -> bytes:
        out = tmp_path / name
        assert (
            run_cli(capsys, "--synthetic", 8, "--seed", seed, "--output", out)[0] == 0
        )
        return out.read_bytes()

    assert make(3, "a.jsonl") == make(3, "b.jsonl")
    assert make(3, "a.jsonl") != make(4, "c.jsonl")


@pytest.mark.parametrize("num_docs", [2, 5, 20])
def test_synthetic_samples_are_answerable_and_valid(num_docs):
    rows = synthetic.make_synthetic(30, seed=1, num_docs=num_docs)
    assert convert_rows(rows, "synthetic") == rows  # passes validation
    assert len({r["question"].split()[1] for r in rows}) > 1  # several question types
    for row in rows:
        [answer] = row["answers"]
        assert answer in row["context"]
        docs = row["context"].split("\n\n")
        assert len(docs) == num_docs
        assert [d.split("\n")[0] for d in docs] == [
            f"Document {i}:" for i in range(1, num_docs + 1)
        ]
        titles = [d.split("\n")[1] for d in docs]
        assert len(set(titles)) == num_docs


def test_synthetic_rejects_too_few_documents(capsys):
    with pytest.raises(ValueError, match="num_docs"):
        synthetic.make_synthetic(1, seed=0, num_docs=1)
    with pytest.raises(SystemExit) as exc:
        prepare_data.main(
            ["--synthetic", "1", "--num-docs", "1", "--output", "x.jsonl"]
        )
    assert exc.value.code == 2


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


# ------------------------------------------------------------------------ CLI


@pytest.mark.parametrize(
    "argv",
    [
        ["--output", "x.jsonl"],  # no source
        [
            "--synthetic",
            "2",
            "--input",
            "a.jsonl",
            "--output",
            "x.jsonl",
        ],  # two sources
        ["--synthetic", "2", "--output", "x.parquet"],  # output must be JSONL
        ["--synthetic", "2"],  # no output
    ],
)
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        prepare_data.main(argv)
    assert exc.value.code == 2

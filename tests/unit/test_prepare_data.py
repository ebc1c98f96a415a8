"""Data preparation: converting each input layout, atomic writes, synthetic
data, CLI arguments.

Offline and fast. The refusals of bad input are in test_prepare_data_errors.py,
the hub download in test_prepare_data_hub.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from examples import prepare_data
from memagent_workflow.data import files, synthetic
from memagent_workflow.data.files import DataError
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

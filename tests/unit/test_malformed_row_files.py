"""The malformed-input campaign: whole row files that cannot be read.

A directory in place of the file, an empty one, a cut one, a byte-order mark,
a cut parquet file, NaN ids, huge values, ``--output`` naming a directory, and
one case through the real command line: ``prepare_data.py`` (exit 2, nothing
written) and the eval set reader refuse each by name. (One bad row among good
ones: test_malformed_rows.py.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from memagent_workflow.eval import sets
from tests.unit.malformed import assert_names, dumps, files_in, prepare

ROOT = Path(__file__).resolve().parents[2]

ROW = {"id": "a", "question": "Q?", "context": "C", "answers": ["A"]}
TWO = [dict(ROW, id="a"), dict(ROW, id="b")]


def _lines(rows) -> bytes:
    return b"".join(dumps(r) + b"\n" for r in rows)


def _parquet(path: Path, table: pa.Table) -> bytes:
    pq.write_table(table, path)
    return path.read_bytes()


# name -> (file name, its bytes given the folder, what the message names)
EDGE_CASES = {
    "a directory in place of the file": ("train.jsonl", None, ["is a directory"]),
    "an empty file": ("train.jsonl", lambda _: b"", ["no rows"]),
    "blank lines only": ("train.jsonl", lambda _: b"\n \n\t\n", ["no rows"]),
    "a JSONL file cut mid-row": (
        "train.jsonl",
        lambda _: _lines(TWO) + dumps(ROW)[:9],
        ["line 3", "field '(row)'", "invalid JSON"],
    ),
    "a JSON list cut mid-row": (
        "eval_2.json",
        lambda _: b"[\n" + dumps(TWO[0]) + b",\n" + dumps(TWO[1])[:12],
        ["invalid JSON", "line 3 column"],
    ),
    "a JSON list cut after a row": (
        "eval_2.json",
        lambda _: b"[\n" + dumps(TWO[0]) + b",\n",
        ["invalid JSON", "line 3 column"],
    ),
    "a compact JSON list, not UTF-8": (
        "eval_2.json",
        lambda _: b"[" + dumps(ROW).replace(b"Q?", b"Q\xff?") + b"]",
        ["line 1", "not UTF-8 text: byte 0xff at column"],
    ),
    "a UTF-8 byte-order mark": (
        "train.jsonl",
        lambda _: b"\xef\xbb\xbf" + _lines([ROW]),
        ["line 1", "field '(row)'", "BOM"],
    ),
    "a parquet file cut short": (
        "train.parquet",
        lambda root: _parquet(root / "t.parquet", pa.Table.from_pylist(TWO))[:-40],
        ["cannot read parquet"],
    ),
    "NaN ids in parquet": (
        "train.parquet",
        lambda root: _parquet(
            root / "t.parquet",
            pa.Table.from_pylist([dict(ROW, id=float("nan")), dict(ROW, id=1.5)]),
        ),
        ["row 0 (0-based)", "field 'id'", "got nan"],
    ),
    "a huge wrong-typed value": (
        "train.jsonl",
        lambda _: _lines([dict(ROW, context=list(range(300_000)))]),
        ["line 1", "field 'context'"],
    ),
    "a number of a million digits": (
        "train.jsonl",
        lambda _: _lines([ROW]).replace(b'"C"', b"1" * 1_000_000),
        ["line 1", "field '(row)'", "invalid JSON"],
    ),
}


@pytest.mark.parametrize("case", EDGE_CASES)
def test_an_edge_case_file_is_refused_by_name(tmp_path, case):
    name, content, parts = EDGE_CASES[case]
    src = tmp_path / name
    if content is None:
        src.mkdir()
        (src / "rows.jsonl").write_bytes(_lines([ROW]))
    else:
        data = content(tmp_path)
        for scratch in tmp_path.iterdir():
            scratch.unlink()
        src.write_bytes(data)
    code, err = prepare(src, tmp_path / "out" / "rows.jsonl")
    assert code == 2, err
    assert_names(err, str(src), *parts)
    assert not (tmp_path / "out").exists() or files_in(tmp_path / "out") == []
    with pytest.raises(sets.EvalDataError) as refused:
        sets.load_eval_file(src)
    assert_names(str(refused.value), str(src), *parts)


def test_an_output_that_is_a_directory_is_refused_before_writing(tmp_path):
    src, out = tmp_path / "train.jsonl", tmp_path / "rows.jsonl"
    src.write_bytes(_lines(TWO))
    out.mkdir()
    code, err = prepare(src, out)
    assert code == 2
    assert_names(err, str(out), "is a directory")
    assert files_in(tmp_path) == ["train.jsonl"]


def test_the_cli_shows_the_refusal_without_a_traceback(tmp_path):
    src, out = tmp_path / "train.jsonl", tmp_path / "rows.jsonl"
    src.write_bytes(_lines([ROW]) + b'{"id": "b", "question": "Q\xff"}\n')
    done = subprocess.run(
        [sys.executable, "examples/prepare_data.py", "--input", str(src)]
        + ["--output", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert_names(done.stderr, f"{src}: line 2", "field '(row)'", "not UTF-8 text")
    assert files_in(tmp_path) == ["train.jsonl"]

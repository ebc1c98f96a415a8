"""Offline tests for RULER-HQA eval data: build (and its CLI), load/validate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from examples import prepare_eval_data as cli
from memagent_workflow.eval import build as eval_build
from memagent_workflow.eval import sets
from memagent_workflow.eval.sets import EvalDataError

ROOT = Path(__file__).resolve().parents[2]

N_QUESTIONS, N_PARAS = 6, 10


def fake_hotpot() -> list[dict]:
    """6 distractor-style questions, 10 distinctly titled paragraphs each, 2 gold."""
    records = []
    for q in range(N_QUESTIONS):
        context = [
            [f"Title {q}-{p}", [f"Fact {q}.{p} first.", f" Fact {q}.{p} second."]]
            for p in range(N_PARAS)
        ]
        records.append(
            {
                "_id": f"id{q:02d}",
                "question": f"Which thing is number {q}?",
                "answer": f"Answer {q}",
                "type": "bridge",
                "level": "hard",
                "supporting_facts": [[f"Title {q}-3", 0], [f"Title {q}-7", 1]],
                "context": context,
            }
        )
    return records


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "hotpot_dev_distractor_v1.json"
    path.write_text(json.dumps(fake_hotpot()), encoding="utf-8")
    return path


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def good_sample(**over) -> dict:
    s = {"id": "a", "question": "Q?", "context": "Document 1:\nT\nx", "answers": ["A"]}
    s.update(over)
    return s


# ------------------------------------------------------------------ build

ALL = list(range(N_QUESTIONS))


def test_build_is_deterministic(tmp_path: Path, source: Path) -> None:
    a = eval_build.build([12, 30], source, 7, tmp_path / "a", ALL, progress=False)
    b = eval_build.build([12, 30], source, 7, tmp_path / "b", ALL, progress=False)
    c = eval_build.build([12, 30], source, 8, tmp_path / "c", ALL, progress=False)
    assert [p.name for p in a] == ["eval_12.json", "eval_30.json"]
    for pa, pb, pc in zip(a, b, c, strict=True):
        assert pa.read_bytes() == pb.read_bytes()
        assert pa.read_bytes() != pc.read_bytes()
    assert not list((tmp_path / "a").glob(".*tmp"))  # temp files renamed away


def test_build_takes_the_given_questions_and_says_it_is_not_official(
    tmp_path: Path, source: Path
) -> None:
    (path,) = eval_build.build([30], source, 1, tmp_path, [4, 1, 3], progress=False)
    raw = json.loads(path.read_text())
    assert [r["index"] for r in raw] == [4, 1, 3]  # the official file's order
    assert {r["set"] for r in raw} == {"RULER-HQA-style"}
    samples = sets.load_eval_file(path)
    assert [s["id"] for s in samples] == ["4", "1", "3"]
    assert {s["set"] for s in samples} == {"RULER-HQA-style"}
    for q, s in zip([4, 1, 3], samples, strict=True):
        assert s["question"] == f"Which thing is number {q}?"
        assert s["answers"] == [f"Answer {q}"]
        assert s["num_docs"] == 30
        docs = s["context"].split("\n\n")
        assert len(docs) == 30
        assert [d.split("\n", 1)[0] for d in docs] == [
            f"Document {i}:" for i in range(1, 31)
        ]
        assert len(set(d.split("\n", 1)[1] for d in docs)) == 30  # distinct
        for p in range(N_PARAS):  # own paragraphs (gold included), "" joined
            text = f"Title {q}-{p}\nFact {q}.{p} first. Fact {q}.{p} second."
            assert sum(d.endswith("\n" + text) for d in docs) == 1
        # the supporting facts' sentences: what eval traces locate as evidence
        assert s["evidence"] == [f"Fact {q}.3 first.", f"Fact {q}.7 second."]
    # the question's own paragraphs are not always on top: the mix is shuffled
    first = [d.split("\n")[1] for d in samples[0]["context"].split("\n\n")[:10]]
    assert first != [f"Title 4-{p}" for p in range(10)]


def test_official_indices_come_from_the_index_field(tmp_path: Path) -> None:
    rows = [good_sample(id=None, index=i) for i in (7, 2, 5)]
    assert eval_build.official_indices(write_json(tmp_path / "e.json", rows)) == [
        7,
        2,
        5,
    ]
    with pytest.raises(EvalDataError, match="item 1 .*'index'.*official eval_N.json"):
        eval_build.official_indices(
            write_json(tmp_path / "f.json", [rows[0], good_sample()])
        )


def test_build_jsonl_source_matches_list(tmp_path: Path, source: Path) -> None:
    jsonl = tmp_path / "dev.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in fake_hotpot()) + "\n")
    (a,) = eval_build.build([12], source, 3, tmp_path / "a", ALL[:4], progress=False)
    (b,) = eval_build.build([12], jsonl, 3, tmp_path / "b", ALL[:4], progress=False)
    assert a.read_bytes() == b.read_bytes()
    assert len(sets.load_eval_file(a)) == 4


def test_build_size_errors(tmp_path: Path, source: Path) -> None:
    pool = N_QUESTIONS * N_PARAS
    eval_build.build([pool], source, 0, tmp_path, [0, 1], progress=False)  # the max
    with pytest.raises(EvalDataError, match=f"maximum N is {pool}"):
        eval_build.build([pool + 1], source, 0, tmp_path, [0, 1], progress=False)
    with pytest.raises(EvalDataError, match="at least 10"):
        eval_build.build([5], source, 0, tmp_path, [0, 1], progress=False)
    with pytest.raises(EvalDataError, match=r"indices \[6\] are not in it"):
        eval_build.build([12], source, 0, tmp_path, [0, 6], progress=False)


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda r: r.__setitem__(2, "x"), ["item 2 (0-based)", "JSON object"]),
        (lambda r: r[1].pop("_id"), ["item 1 (0-based)", "'_id'"]),
        (
            lambda r: r[3].__setitem__("answer", ""),
            ["item 3 (0-based)", "id03", "'answer'"],
        ),
        (lambda r: r[0]["context"].__setitem__(4, ["T", "s"]), ["'context[4]'"]),
    ],
)
def test_bad_source(tmp_path: Path, mutate, expected: list[str]) -> None:
    records = fake_hotpot()
    mutate(records)
    path = write_json(tmp_path / "dev.json", records)
    with pytest.raises(EvalDataError) as err:
        eval_build.build([12], path, 0, tmp_path, [0, 1], progress=False)
    for part in [str(path), *expected]:
        assert part in str(err.value)


def test_build_cli(tmp_path: Path, source: Path, capsys) -> None:
    out = tmp_path / "out"
    base = ["--data-root", str(out), "--source", str(source)]
    assert cli.main([*base, "--build", "12", "30"]) == 2
    assert "--seed" in capsys.readouterr().err
    assert cli.main([*base, "--build", "12", "--seed", "5"]) == 2  # no eval_200.json
    err = capsys.readouterr().err
    assert "eval_200.json: not found" in err and "--indices-from" in err
    official = [good_sample(id=None, index=i) for i in (3, 0)]
    out.mkdir()
    write_json(sets.eval_file(out, 200), official)  # the default --indices-from
    assert cli.main([*base, "--build", "12", "--seed", "5"]) == 0
    said = capsys.readouterr().out
    assert "RULER-HQA-style" in said and "not an official set" in said
    samples = sets.load_eval_file(out / "eval_12.json")
    assert [s["id"] for s in samples] == ["3", "0"]
    assert cli.main([*base, "--build", "999", "--seed", "5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "maximum N is 60" in err
    assert "Traceback" not in err


# --------------------------------------------------------------- loading


def test_iter_streams_build_layout_and_falls_back(tmp_path: Path, source) -> None:
    (path,) = eval_build.build([12], source, 1, tmp_path, [0, 1, 2], progress=False)
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[0] == "[" and lines[-2:] == ["]", ""] and len(lines) == 3 + 3
    streamed = list(sets.iter_eval_file(path))
    assert streamed == sets.load_eval_file(path)
    assert [s["id"] for s in streamed] == [
        str(r["index"]) for r in json.loads(path.read_text())
    ]
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(json.loads(path.read_text()), indent=2))
    assert sets.load_eval_file(pretty) == streamed


def test_original_field_names(tmp_path: Path) -> None:
    data = [
        {
            "input": "Q1?",
            "context": "Document 1:\nT\nx",
            "answers": ["A"],
            "num_docs": 1,
            "index": 17,
        },  # fmt: skip
        {
            "question": "Q2?",
            "context": "Document 1:\nT\nx\n\nDocument 2:\nU\ny",
            "answers": "B",
            "_id": "abc",
        },  # fmt: skip
    ]
    samples = sets.load_eval_file(write_json(tmp_path / "eval_1.json", data))
    assert samples == [
        {
            "id": "17",
            "question": "Q1?",
            "context": "Document 1:\nT\nx",
            "answers": ["A"],
            "num_docs": 1,
            "set": None,
        },  # fmt: skip
        {
            "id": "abc",
            "question": "Q2?",
            "context": data[1]["context"],
            "answers": ["B"],
            "num_docs": 2,
            "set": None,
        },  # fmt: skip
    ]


@pytest.mark.parametrize(
    "data, expected",
    [
        ("{not json", ["line 1", "invalid JSON"]),
        ({"a": 1}, ["line 1", "'question'", "missing"]),
        ([good_sample(), 5], ["item 1 (0-based)", "expected an object"]),
        ([{"id": "q", "context": "c", "answers": ["A"]}], ["item 0 (0-based)", "'q'", "'question'"]),
        ([good_sample(question="  ")], ["item 0 (0-based)", "'a'", "'question'"]),
        ([{"input": "", "context": "c", "answers": ["A"], "index": 4}], ["'4'", "'input'"]),
        ([good_sample(), good_sample(id="b", context=None)], ["item 1 (0-based)", "'b'", "'context'"]),
        ([{"id": "a", "question": "Q", "answers": ["A"]}], ["item 0 (0-based)", "'context'", "missing"]),
        ([good_sample(context=[3, 17, 9])], ["item 0 (0-based)", "'context'", "index-only", "prepare_eval_data.py"]),
        ([{"id": "a", "question": "Q", "context": "c"}], ["item 0 (0-based)", "'answers'", "missing"]),
        ([good_sample(answers=[])], ["item 0 (0-based)", "'answers'"]),
        ([good_sample(answers=["A", 3])], ["item 0 (0-based)", "'answers'"]),
        ([good_sample(answers={"A": 1})], ["item 0 (0-based)", "'answers'"]),
        ([good_sample(num_docs="7")], ["item 0 (0-based)", "'num_docs'"]),
        ([good_sample(), good_sample()], ["item 1 (0-based)", "'a'", "'id'", "duplicate 'a' (first at"]),
    ],
)  # fmt: skip
def test_load_errors(tmp_path: Path, data, expected: list[str]) -> None:
    path = tmp_path / "eval_9.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    with pytest.raises(EvalDataError) as err:
        sets.load_eval_file(path)
    for part in [str(path), *expected]:
        assert part in str(err.value)


def test_no_areal_import() -> None:
    code = "import sys, memagent_workflow.eval.sets; print('areal' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr

"""The length table: eval summaries in, one row per run and one column per length."""

import json

import pytest

from memagent_workflow.data.synthetic import make_needle
from memagent_workflow.eval.length_table import main, write_length_table
from standin.config import StandinConfig
from standin.cpu_job import synthetic_eval_set


def summary(
    folder,
    accuracy: dict[int, float | None],
    memory: dict | None = None,
    exact: dict[int, float] | None = None,
):
    """An eval summary; ``memory``: the split of every length (eval.trace);
    ``exact``: exact match per length (else none recorded)."""
    folder.mkdir(parents=True)
    rows = [{"length": n, "sub_em": a} for n, a in accuracy.items()]
    for row in rows if exact else ():
        row["em"] = exact.get(row["length"])
    for row in rows if memory else ():
        row["memory"] = memory
    (folder / "summary.json").write_text(json.dumps({"lengths": rows}))
    return folder


# 8 traced samples: 7 caught and kept, 6 of them answered right, 1 caught then
# lost, 1 held but answered wrong (diagnostics.split's keys and order)
SPLIT = {"traced": 8, "read": 100.0, "caught": 100.0, "kept": 87.5,
         "answered": 75.0, "never_caught": 0.0, "caught_then_lost": 12.5,
         "held_but_wrong": 12.5, "right_unheld": 0.0}  # fmt: skip


def test_rows_are_aligned_on_the_union_of_lengths(tmp_path):
    a = summary(tmp_path / "a", {1: 100.0, 16: 87.5})
    # an empty "\boxed{ }" is right by sub-EM, wrong by exact match
    b = summary(
        tmp_path / "b", {1: 25.0, 4: None, 16: 21.875}, exact={1: 0.0, 16: 0.0}
    )
    table = write_length_table(tmp_path / "out", {"trained": a, "wiped": b}, 0.25,
                               train_chunks=2)  # fmt: skip
    assert table == {
        "train_chunks": 2,
        "chunks": [1, 4, 16],
        "trained": [1.0, None, 0.875],
        "wiped": [0.25, None, 0.21875],
        "exact_match": {"trained": [None] * 3, "wiped": [0.0, None, 0.0]},
        "memory": {"trained": [None] * 3, "wiped": [None] * 3},  # no traces
    }
    assert json.loads((tmp_path / "out" / "length_table.json").read_text()) == table
    md = (tmp_path / "out" / "length_table.md").read_text()
    assert "| trained | 1.00 | - | 0.88 |" in md
    exact = md.split("Exact match", 1)[1]
    assert "| wiped | 0.00 | - | 0.00 |" in exact and "| trained |" not in exact
    assert "caught" not in md  # no split without traces
    assert (tmp_path / "out" / "length_table.png").read_bytes()[:4] == b"\x89PNG"


def test_the_split_per_row_and_length_from_the_runs_traces(tmp_path):
    a = summary(tmp_path / "a", {1: 100.0, 16: 75.0}, SPLIT)
    untraced = {**dict.fromkeys(SPLIT), "traced": 0}
    b = summary(tmp_path / "b", {16: 25.0}, untraced)  # eval.trace=false
    table = write_length_table(tmp_path / "out", {"trained": a, "wiped": b})
    assert table["trained"] == [1.0, 0.75]  # the split is not a row of the plot
    assert table["memory"] == {"trained": [SPLIT, SPLIT], "wiped": [None, None]}
    saved = json.loads((tmp_path / "out" / "length_table.json").read_text())
    assert saved["memory"] == table["memory"]
    md = (tmp_path / "out" / "length_table.md").read_text()
    head = next(line for line in md.splitlines() if line.startswith("| row | chunks"))
    assert head.split(" | ")[2:6] == ["traced", "read", "caught", "kept"]
    assert "wrong: caught then lost" in head and "wrong: never caught" in head
    assert "| trained | 16 | 8 | 100 | 100 | 88 | 75 | 0 | 12 | 12 | 0 | - |" in md
    assert "| wiped |" not in md.split("| row | chunks")[1]  # nothing traced


def test_a_missing_summary_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="summary.json"):
        write_length_table(tmp_path / "out", {"trained": tmp_path / "none"})


def test_the_cli_refuses_a_row_without_a_folder(tmp_path):
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path), "--row", "trained"])


def test_a_needle_eval_set_of_n_chunks_is_held_out_and_balanced():
    cfg = StandinConfig(task="needle", needle_distractors=1.0)
    rows = synthetic_eval_set(cfg, 16, 8)
    train = {r["context"] for r in make_needle(2000, cfg.seed, chunks=8)}
    for row in rows:
        assert row["num_docs"] == 8
        assert row["context"].count(" . ") + 1 == 8  # one sentence per chunk
        assert row["context"].count("code of") == 8  # every other one a distractor
        assert row["context"] not in train
    answers = [row["answers"][0] for row in rows]
    assert sorted(answers.count(code) for code in set(answers)) == [4, 4, 4, 4]


def test_a_share_of_distractors_mixes_filler_and_codes():
    rows = make_needle(200, 3, chunks=5, distractors=0.5)
    codes = sum(r["context"].count("code of") - 1 for r in rows)
    assert 0.4 < codes / (200 * 4) < 0.6
    # bools keep their meaning (and their rows)
    assert make_needle(5, 3, 4, True) == make_needle(5, 3, 4, 1.0)
    assert make_needle(5, 3, 4, False) == make_needle(5, 3, 4, 0.0)

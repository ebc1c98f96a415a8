"""The benchmarks at toy sizes, through `bench/run.py`, so that they do not rot.

No timing is asserted: only that every benchmark runs end to end, writes its
results and report, and measures what it claims to measure (e.g. both rollout
drivers do the same work, and the lockstep driver really is lockstep).
"""

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """Run `bench/run.py --smoke` once; returns (results by name, report text)."""
    from bench import run

    out = tmp_path_factory.mktemp("bench")
    md = out / "results.md"
    run.main(["--smoke", "--out", str(out), "--md", str(md)])
    results = {
        name: json.loads((out / f"{name}.json").read_text())
        for name in ("overhead", "async_vs_lockstep", "scaling")
    }
    return results, md.read_text()


def test_every_result_has_machine_info_and_targets(smoke):
    results, _ = smoke
    for res in results.values():
        assert res["smoke"] is True
        assert {"cpu_cores", "python", "torch", "date"} <= res["machine"].keys()
        assert res["targets"]
        for t in res["targets"]:
            assert {"metric", "measured", "target", "ratio", "pass"} <= t.keys()


def test_overhead_times_every_turn_of_the_document(smoke):
    res = smoke[0]["overhead"]
    chunks = res["tokenisation"]["chunks"]
    assert chunks > 1 and res["tokenisation"]["tokens_per_s"] > 0
    assert res["eval_turn"]["turns"] == chunks + 1
    assert res["train_turn"]["turns"] == (chunks + 1) * res["train_turn"]["group_size"]
    assert res["eval_turn"]["cpu_ms_per_turn"] > 0
    assert res["breakdown_us"]["prompt_build_us"] > 0


def test_both_rollout_drivers_do_the_same_work(smoke):
    res = smoke[0]["async_vs_lockstep"]
    cfg, a, lk = res["config"], res["async"], res["lockstep"]
    episodes = cfg["questions"] * cfg["group_size"]
    assert a["episodes"] == lk["episodes"] == episodes
    assert a["trajectories"] == lk["trajectories"] == cfg["questions"]
    assert a["requests"] == lk["requests"] == a["rows"] == lk["rows"]
    assert (
        a["requests"] == sum(cfg["chunk_counts_actual"]) * cfg["group_size"] + episodes
    )
    assert res["same_work"]
    assert res["ideal"]["wall_s"] <= res["zero_driver_cost"]["async_s"]
    assert res["zero_driver_cost"]["async_s"] <= res["zero_driver_cost"]["lockstep_s"]


def test_the_lockstep_driver_is_lockstep(smoke):
    lk = smoke[0]["async_vs_lockstep"]["lockstep"]
    assert lk["lockstep_violations"] == 0
    assert lk["turns_traced"] == lk["requests"]
    # one step per chunk of the longest document of each batch, plus the answers
    cfg = smoke[0]["async_vs_lockstep"]["config"]
    counts, batch = lk["chunk_counts"], cfg["concurrency"]
    batches = [counts[i : i + batch] for i in range(0, len(counts), batch)]
    assert lk["steps"] == sum(max(b) + 1 for b in batches)


def test_lockstep_check_catches_an_early_start():
    from bench.schedule import lockstep_violations

    ok = [(0, 0, 0.0, 1.0), (0, 0, 0.0, 2.0), (0, 1, 2.5, 3.0)]
    early = [(0, 0, 0.0, 1.0), (0, 0, 0.0, 2.0), (0, 1, 1.5, 3.0)]
    assert lockstep_violations(ok) == 0
    assert lockstep_violations(early) == 1


def test_zero_cost_schedules_on_a_hand_checked_case():
    from bench.schedule import async_schedule_s, lockstep_schedule_s

    # two questions, one episode each: 3 turns of 1 s, and 1 turn of 1 s
    work = [[[1.0, 1.0, 1.0]], [[1.0]]]
    assert async_schedule_s(work, slots=2, concurrency=2) == 3.0
    assert lockstep_schedule_s(work, slots=2, batch=2) == 3.0
    # with one question in flight at a time the short one waits for the long one
    assert async_schedule_s(work, slots=2, concurrency=1) == 4.0


def test_scaling_runs_one_subprocess_per_length(smoke):
    res = smoke[0]["scaling"]
    rows = res["lengths"]
    assert len(rows) >= 2
    assert [r["tokens"] for r in rows] == sorted(r["tokens"] for r in rows)
    for r in rows:
        assert r["turns"] == r["chunks"] + 1 == r["memory_turns"] + 1
        assert r["peak_rss_mb"] >= r["baseline_rss_mb"] > 0
        assert r["tokenise_s"] > 0 and r["turns_s"] > 0
    assert 0 <= res["fit_total"]["r2"] <= 1


def test_report_has_the_three_tables(smoke):
    _, md = smoke
    for title in ("Driver overhead", "Async (AReaL) vs lockstep", "Scaling in context"):
        assert title in md
    assert "Smoke run" in md
    assert md.count("\n| metric | measured | target | ratio | status |") == 3

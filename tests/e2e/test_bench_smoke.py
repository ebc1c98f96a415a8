"""The benchmarks at toy sizes, through `bench/run.py`, so that they do not rot.

No timing is asserted: only that every benchmark runs end to end, writes its
results and report, and measures what it claims to measure (e.g. both rollout
drivers do the same work, and the lockstep driver really is lockstep).
"""

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NAMES = ("overhead", "async_vs_lockstep", "replay", "loop", "scaling")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """Run `bench/run.py --smoke` once; returns (results by name, report text)."""
    from bench import run

    out = tmp_path_factory.mktemp("bench")
    md = out / "results.md"
    run.main(["--smoke", "--out", str(out), "--md", str(md)])
    results = {name: json.loads((out / f"{name}.json").read_text()) for name in NAMES}
    return results, md.read_text(), out


def test_every_result_has_machine_info_and_targets(smoke):
    results = smoke[0]
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


def test_scaling_fits_cpu_and_wall_time_and_states_the_load(smoke):
    res = smoke[0]["scaling"]
    rows = res["lengths"]
    assert len(rows) >= 2
    assert [r["tokens"] for r in rows] == sorted(r["tokens"] for r in rows)
    for r in rows:
        assert r["turns"] == r["chunks"] + 1 == r["memory_turns"] + 1
        assert r["peak_rss_mb"] >= r["baseline_rss_mb"] > 0
        assert r["tokenise_s"] > 0 and r["turns_s"] > 0
        assert r["total_cpu_s"] == r["tokenise_cpu_s"] + r["turns_cpu_s"]
        assert 0 <= r["machine_busy"] <= 1 and r["loadavg_before"] >= 0
    assert 0 <= res["fit_cpu"]["r2"] <= 1 and 0 <= res["fit_total"]["r2"] <= 1
    assert res["targets"][0]["ratio"] == res["fit_cpu"]["r2"]  # judged on CPU time
    assert res["own_cpu_s"] > 0 and 0 <= res["machine_busy"] <= 1


def test_replay_covers_every_mix_and_slot_count(smoke):
    res = smoke[0]["replay"]
    cfg = res["config"]
    assert [(r["mix"], r["slots"]) for r in res["rows"]] == [
        (m, s) for m in cfg["mixes"] for s in cfg["slots"]
    ]
    for r in res["rows"]:
        assert r["episodes"] == cfg["questions"] * cfg["group_size"]
        # no schedule beats the engine-bound ideal
        for key in ("async_s", "lockstep_whole_batch_s", "lockstep_small_batch_s"):
            assert r[key] >= r["ideal_s"] * (1 - 1e-9)
        assert r["small_batch_questions"] == max(1, r["slots"] // cfg["group_size"])


def test_every_loop_trains_every_step(smoke):
    res = smoke[0]["loop"]
    cfg = res["config"]
    assert len(res["rows"]) == len(cfg["mixes"]) * len(cfg["ratios"])
    for row in res["rows"]:
        assert set(row["loops"]) == {"original"} | {
            str(k) for k in cfg["offpolicyness"]
        }
        for loop in row["loops"].values():
            assert len(loop["steps"]) == cfg["steps"]
            for step in loop["steps"]:
                assert len(step["heads"]) == cfg["batch"]  # questions trained
                assert step["rows"] > 0 and step["tokens"] > step["rows"]
        assert row["predicted"]["ideal"] >= row["predicted"]["sync_zero_cost"]


def test_train_steps_follow_the_cost_model(smoke):
    from bench.train_cost import Calibration, TrainCost, train_seconds

    res = smoke[0]["loop"]
    model = TrainCost(**res["config"]["train"])
    for row in res["rows"]:
        calib = Calibration(**row["calibration"])
        for loop in row["loops"].values():
            for step in loop["steps"]:
                want = train_seconds(
                    model, calib, row["ratio"], step["rows"], step["tokens"]
                )
                assert step["train_s"] == pytest.approx(want)


def test_synchronous_loops_train_on_policy_and_areal_keeps_its_bound(smoke):
    res = smoke[0]["loop"]
    for row in res["rows"]:
        loops = row["loops"]
        assert loops["original"]["lockstep_violations"] == 0
        for name in ("original", "0"):
            assert loops[name]["staleness_max"] == 0
            assert loops[name]["token_staleness_mean"] == 0
        for k in res["config"]["offpolicyness"]:
            loop = loops[str(k)]
            assert loop["max_staleness"] == k  # what AReaL's StalenessManager enforced
            assert loop["admission_violations"] == 0
            steps, batch = res["config"]["steps"], res["config"]["batch"]
            assert loop["questions_started"] >= steps * batch


def test_report_has_every_section_and_the_plot(smoke):
    _, md, out = smoke
    for title in (
        "Driver overhead",
        "small-batch lockstep",
        "at its own scale",
        "The training loop",
        "Scaling in context",
    ):
        assert title in md
    assert "Smoke run" in md
    assert md.count("\n| metric | measured | target | ratio | status |") == 5
    assert "](loop.png)" in md and (out / "loop.png").stat().st_size > 0
    assert "no earlier run with the same configuration" in md


def test_a_second_loop_run_is_compared_with_the_first(smoke, tmp_path):
    """run.py keeps the replaced loop result; the report checks the two agree."""
    import shutil

    from bench.report import write_report

    _, _, out = smoke
    for name in ("loop.json",):
        shutil.copy(out / name, tmp_path / name)
    shutil.copy(out / "loop.json", tmp_path / "loop.previous.json")
    md = write_report(tmp_path, tmp_path / "results.md").read_text()
    assert "differ by 0.0% (median) and 0.0% at most: within 10%" in md

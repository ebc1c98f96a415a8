"""Benchmark 7's arithmetic: per-step actor costs, the seed aggregate, the targets,
the GPU cost model and the report section."""

import pytest

from bench import actor
from bench.report_actor import actor as render
from bench.run import parse_args


def step(n, cpu_prox, cpu_train, rows, tied, skipped_rows, skipped_tokens, ev=None):
    return {
        "step": n,
        "rows": rows,
        "groups": 16,
        "tied_groups": tied,
        "rows_tied": 16 * tied,
        "rows_skipped": skipped_rows,
        "tokens": 6000,
        "tokens_skipped": skipped_tokens,
        "eval_reward": ev,
        "elapsed_s": 10.0 * n,
        "prox_approx_error": None,
        "timing_s": {
            "cpu_recompute_logp": cpu_prox,
            "cpu_train_step": cpu_train,
            "recompute_logp": 2 * cpu_prox,
            "train_step": 2 * cpu_train,
        },
    }


def test_per_step_leaves_out_the_first_step_and_sums_the_passes():
    steps = [
        step(1, 70.0, 9.0, 256, 0, 0, 0),  # start-up: left out
        step(2, 0.4, 0.6, 256, 4, 0, 0),
        step(3, 0.2, 0.4, 192, 8, 64, 1500),
    ]
    got = actor.per_step(steps)
    assert got["cpu_recompute_logp_s"] == pytest.approx(0.3)
    assert got["cpu_actor_s"] == pytest.approx(0.8)
    assert got["wall_actor_s"] == pytest.approx(1.6)
    assert got["rows_trained"] == 224
    assert got["tokens_trained"] == 6000 - 750
    assert got["tied_share"] == pytest.approx((4 + 8) / 32)


def summary(name, seed, cpu, step_to):
    return {
        "run": name,
        "seed": seed,
        "cpu_actor_s": cpu,
        "cpu_recompute_logp_s": cpu / 2,
        "cpu_train_step_s": cpu / 2,
        "wall_actor_s": 2 * cpu,
        "wall_recompute_logp_s": cpu,
        "wall_train_step_s": cpu,
        "rows_trained": 200,
        "tokens_trained": 5000,
        "tied_share": 0.5,
        "step_to_0.9": step_to,
        "seconds_to_0.9": None if step_to is None else 3.0 * step_to,
        "final_eval": 0.95,
        "wall_s": 200.0,
    }


def test_targets_compare_both_options_with_the_baseline_seeds():
    runs = [
        summary(name, s, cpu, to)
        for name, cpu, tos in [
            ("baseline", 1.0, (15, 20, 35)),
            ("skip_tied", 0.7, (15, 25, 30)),
            ("loglinear", 0.8, (20, None, 15)),  # one seed never gets there
            ("both", 0.6, (40, 45, 50)),  # learns slower than any baseline seed
        ]
        for s, to in zip(actor.SEEDS, tos, strict=True)
    ]
    agg = actor.aggregate(runs)
    assert agg["baseline"]["step_to_0.9"] == {
        "mean": 70 / 3,
        "min": 15,
        "max": 35,
        "n": 3,
    }
    result = {t["metric"]: t for t in actor.targets(agg, smoke=False)}
    saving = result["actor CPU s per step, both options vs baseline"]
    assert saving["pass"] is True and "40% less" in saving["measured"]
    learned = {
        name: result[f"{name}: steps to 0.9 held-out accuracy (median of seeds)"]
        for name in ("skip_tied", "loglinear", "both")
    }
    assert learned["skip_tied"]["pass"]  # median 25 within 15-35
    assert learned["loglinear"]["pass"]  # median 20: one seed never is allowed
    assert learned["loglinear"]["measured"] == "20 (seeds: 20, never, 15)"
    assert not learned["both"]["pass"]  # median 45, slower than any baseline seed
    report = {
        "config": {
            "file": "config_cpu.yaml",
            "overrides": list(actor.COMMON),
            "total_train_steps": 50,
            "seeds": list(actor.SEEDS),
            "parallel_runs": 2,
        },
        "runs": runs,
        "configs": agg,
        "cost_model": actor.cost_model(),
        "total_wall_s": 600.0,
        "targets": actor.targets(agg, smoke=False),
    }
    text = "\n".join(render(report))
    assert (
        "| both | 0.30 (0.30-0.30) | 0.30 (0.30-0.30) | 0.60 (0.60-0.60) | -40% |"
        in text
    )


def test_the_cost_model_counts_config_yaml_tokens_and_savings():
    m = actor.cost_model()
    assert m["questions"] == 128 and m["group_size"] == 16
    assert m["tokens_per_row"]["memory"] == 200 + 1024 + 5000 + 1024
    # 6, 7, 8, 9 chunks, at most 8 read: 7.25 memory rows and a final row
    assert m["rows_per_step"] == 128 * 16 * 8.25
    by_rate = {s["tie_rate"]: s for s in m["savings"]}
    assert by_rate[0.3]["skip_tied"] == pytest.approx(0.3)
    assert by_rate[0.3]["loglinear"] == pytest.approx(1 / 6)
    assert by_rate[0.3]["both"] == pytest.approx(1 - 0.7 * 5 / 6)
    assert m["tie_rate_at_success"][0.9] == pytest.approx(0.9**16 + 0.1**16)


def test_the_benchmark_is_run_as_the_docs_say():
    assert parse_args(["--only", "actor"]).only == ["actor"]

"""bench/length.py's arithmetic: the eval's cost per turn and the targets it sets."""

from bench.length import COST_SPREAD, ms_per_turn, targets


def test_cost_per_turn_counts_every_memory_turn_and_the_answer():
    timing = [
        {"length": 1, "wall_s": 0.2, "samples": 50, "output_tokens": 1},
        {"length": 8, "wall_s": 0.9, "samples": 50, "output_tokens": 1},
        {"length": 8, "wall_s": 0.45, "samples": 25, "output_tokens": 1},  # a resume
    ]
    cost = ms_per_turn(timing, (1, 8, 16))
    assert cost[0] == 1000 * 0.2 / (50 * 2)
    assert cost[1] == 1000 * 0.9 / (50 * 9)  # both segments: 2 ms a turn
    assert cost[2] is None  # not measured


def table(ms: list[float], wiped: float = 0.25) -> dict:
    return {
        "chunks": [1, 8, 256],
        "trained": [1.0, 0.95, 0.85],
        "warm_start": [0.1, 0.1, 0.1],
        "memory_wiped": [0.25, wiped, 0.25],
        "ms_per_turn": ms,
    }


def verdicts(t: dict) -> dict[str, bool]:
    return {row["metric"]: row["pass"] for row in targets({0: t}, 1, smoke=False)}


def test_targets_pass_a_constant_cost_and_fail_a_growing_one():
    assert all(verdicts(table([3.0, 1.0, 1.2])).values())
    grows = verdicts(table([1.0, 1.0, 1.0 * COST_SPREAD + 0.1]))
    assert [m for m, ok in grows.items() if not ok] == [
        "seed 0: eval wall per turn, 256 vs 8 chunks"
    ]


def test_a_control_above_chance_plus_the_margin_fails():
    failed = [m for m, ok in verdicts(table([1, 1, 1], wiped=0.36)).items() if not ok]
    assert failed == ["seed 0: memory_wiped, highest accuracy at any length"]

"""bench/smoke_projection.py's reading of the main job's steps: the median of the
steps that neither validate nor save, from one run only."""

from __future__ import annotations

import json

import pytest

from bench.smoke_projection import LOGS, MAIN_STEPS, ROOT, main_job_step


def write_steps(root, steps: list[dict]) -> None:
    path = root / LOGS.relative_to(ROOT) / "t" / "steps.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(s) + "\n" for s in steps))


def step(n: int, elapsed: float, **timing: float) -> dict:
    return {"step": n, "elapsed_s": elapsed, "timing_s": timing}


def test_the_median_leaves_out_the_steps_that_validate_or_save(tmp_path):
    steps = [step(n, 3.0 * n) for n in range(1, MAIN_STEPS + 1)]
    steps[4] = step(5, 15.0 + 50, eval=1.0)  # a validation: 53 s after step 4
    steps[5]["elapsed_s"] = steps[4]["elapsed_s"] + 3.0
    for later in steps[6:]:
        later["elapsed_s"] += 50
    steps[-1]["timing_s"] = {"save": 0.1}
    write_steps(tmp_path, steps)
    median, walls = main_job_step("t", tmp_path)
    assert median == pytest.approx(3.0) and len(walls) == MAIN_STEPS - 3
    assert max(walls) == pytest.approx(3.0)


def test_a_resumed_trial_is_refused_not_timed(tmp_path):
    # a second run of the same trial resumes after its recover checkpoint: its
    # steps follow the first run's, and its clock starts again (a negative wall)
    first = [step(n, 3.0 * n) for n in range(1, 8)]
    second = [step(n, 3.0 * (n - 7)) for n in range(8, MAIN_STEPS + 1)]
    write_steps(tmp_path, first + second)
    with pytest.raises(ValueError, match="not one run's 1 to"):
        main_job_step("t", tmp_path)

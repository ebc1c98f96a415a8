"""The smoke's CPU twin against the step it projects (issue 53, point 4).

Runs docs/smoke.md's CPU twin in this checkout, then the CPU main job for a few
steps (its own trial), and compares the twin's projected step with the main
job's measured one: the median wall time of its steps that neither warm up,
validate nor save. A timing, so a benchmark and not a test: on a shared machine
the two agree only when both meet the same load (docs/smoke.md, "How close").

    uv run python bench/smoke_projection.py            # writes bench/results/smoke_projection.json
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from bench.learning import NO_LENGTH_EVAL

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "outputs/cpu/areal/logs" / getpass.getuser() / "memagent-cpu"
CHECKPOINTS = (
    ROOT / "outputs/cpu/areal/checkpoints" / getpass.getuser() / "memagent-cpu"
)
MAIN_STEPS = 12  # the main job's: step 1 warms up, 5 and 10 validate, 12 saves
TARGET = 0.25  # the bound on the projection's error


def run(cmd: list[str], cwd: Path = ROOT) -> None:
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=cwd, check=True, env={**os.environ, "PYTHONPATH": str(cwd)})


def main_job_cmd(trial: str) -> list[str]:
    """The CPU main job (the README's command) for `MAIN_STEPS` steps as ``trial``."""
    return ["-m", "standin.train", "--config", "config_cpu.yaml",
            f"total_train_steps={MAIN_STEPS}", f"trial_name={trial}", NO_LENGTH_EVAL]  # fmt: skip


def clear_trial(trial: str, root: Path = ROOT) -> None:
    """Remove ``trial``'s logs and checkpoints: a second run would resume from
    its recover checkpoint (``recover.mode: auto``) and time other steps."""
    for folder in (LOGS, CHECKPOINTS):
        shutil.rmtree(root / folder.relative_to(ROOT) / trial, ignore_errors=True)


def main_job_step(trial: str, root: Path = ROOT) -> tuple[float, list[float]]:
    """The median wall time of ``trial``'s steps that neither validate nor save
    (step 1, which warms up, has no step before it to count from), and all of them."""
    path = root / LOGS.relative_to(ROOT) / trial / "steps.jsonl"
    steps = [json.loads(line) for line in path.read_text().splitlines()]
    elapsed = [s["elapsed_s"] for s in steps]
    one_run = all(a < b for a, b in zip(elapsed, elapsed[1:], strict=False))
    if [s["step"] for s in steps] != list(range(1, MAIN_STEPS + 1)) or not one_run:
        raise ValueError(
            f"{path}: steps {[s['step'] for s in steps]} at {elapsed} s, not one "
            f"run's 1 to {MAIN_STEPS} (a resumed or repeated trial: clear it first)"
        )
    walls = [
        now["elapsed_s"] - before["elapsed_s"]
        for before, now in zip(steps, steps[1:], strict=False)
        if not (now["timing_s"].get("eval") or now["timing_s"].get("save"))
    ]
    return statistics.median(walls), walls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", default=str(ROOT / "bench/results/smoke_projection.json")
    )
    args = parser.parse_args()
    py = sys.executable
    run([py, "-m", "standin.smoke", "--config", "config_cpu.yaml"])
    smoke = json.loads((LOGS / "trial0-smoke" / "smoke" / "smoke.json").read_text())
    projected = smoke["projection"]["step_s"]
    trial = "main-job-projection"
    clear_trial(trial)
    run([py, *main_job_cmd(trial)])
    measured, walls = main_job_step(trial)
    error = projected / measured - 1
    result = {
        "projected_step_s": projected,
        "measured_step_s": measured,
        "measured_walls_s": walls,
        "error": error,
        "target": TARGET,
        "within": abs(error) <= TARGET,
        "load_average": os.getloadavg(),
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"projected {projected:.2f} s a step, measured {measured:.2f} s: "
          f"{error:+.0%} (target within {TARGET:.0%})")  # fmt: skip
    return 0 if result["within"] else 1


if __name__ == "__main__":
    sys.exit(main())

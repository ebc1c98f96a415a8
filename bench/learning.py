"""Benchmark 4: GRPO through the real stack teaches the needle task; a control does not.

Each run is the CPU main job (``examples/train.py --config config_cpu.yaml``):
AReaL's PPOTrainer, ``MemAgentWorkflow``, the stand-in server and a weight
update every step, on the needle task with the warm-started word-level model.
Three seeds of it, and one run of the control (``bench.controls``: every memory
row gets another episode's advantage), each in its own subprocess and folder.

    uv run python bench/run.py --only learning        # ~20 min on 2 cores
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from memagent_workflow.curve import first_step_at, plot_curves, read_steps
from memagent_workflow.data.synthetic import NEEDLE_ANSWERS

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "config_cpu.yaml"
CONTROL = "bench.controls.ShuffledMemoryAdvantageWorkflow"
SEEDS = (0, 1, 2)
CONTROL_SEED = 0
TARGET = 0.90  # held-out accuracy every seed must reach
CONTROL_MARGIN = 0.10  # the control must stay within chance + this
BUDGET_S = 20 * 60


def config_value(dotted: str, path: Path = CONFIG) -> Any:
    """A value of the YAML config, e.g. ``config_value("total_train_steps")``."""
    value = yaml.safe_load(path.read_text())
    for key in dotted.split("."):
        value = value[key]
    return value


def train_run(
    out: Path,
    seed: int,
    control: bool = False,
    overrides: tuple[str, ...] = (),
    model_dir: Path | None = None,
    timeout: float = 900,
) -> dict[str, Any]:
    """One CPU main-job run in ``out``; returns its step lines and wall time.

    ``seed`` seeds the model build, the data and the trainer. The model is
    built (or reused, it is cached) in ``model_dir`` (default: ``out/model``).
    """
    out.mkdir(parents=True, exist_ok=True)
    model_dir = model_dir or out / "model"
    entry = (
        ["-m", "bench.learning_run", "--workflow", CONTROL]
        if control
        else ["examples/train.py"]
    )
    cmd = [
        sys.executable, *entry, "--config", str(CONFIG),
        f"seed={seed}", f"standin.seed={seed}", f"actor.path={model_dir}",
        f"cluster.fileroot={out / 'areal'}",
        f"cluster.name_resolve.nfs_record_root={out / 'name_resolve'}",
        f"train_dataset.path={out / 'train.jsonl'}",
        f"valid_dataset.path={out / 'valid.jsonl'}",
        *overrides,
    ]  # fmt: skip
    start = time.perf_counter()
    with open(out / "log.txt", "w") as log:
        proc = subprocess.run(
            cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, timeout=timeout,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        tail = (out / "log.txt").read_text()[-3000:]
        raise RuntimeError(f"run in {out} failed (rc {proc.returncode}):\n{tail}")
    steps_file = next((out / "areal").rglob("steps.jsonl"))
    return {
        "seed": seed,
        "control": control,
        "wall_s": wall,
        "steps": read_steps(steps_file),
        "curve": str(steps_file.parent / "learning_curve.png"),
    }


def summarise(run: dict[str, Any]) -> dict[str, Any]:
    """Steps and seconds to 0.5 and 0.9 held-out accuracy, final and best accuracy."""
    steps = run["steps"]
    evals = [s["eval_reward"] for s in steps if s.get("eval_reward") is not None]
    out = {
        "seed": run["seed"],
        "control": run["control"],
        "wall_s": round(run["wall_s"], 1),
        "steps_run": len(steps),
        "first_reward": steps[0]["reward"] if steps else None,
        "final_eval": evals[-1] if evals else None,
        "best_eval": max(evals) if evals else None,
    }
    for level in (0.5, 0.9):
        hit = first_step_at(steps, "eval_reward", level)
        out[f"step_to_{level}"] = hit["step"] if hit else None
        out[f"seconds_to_{level}"] = hit["elapsed_s"] if hit else None
    return out


def run(smoke: bool = False) -> dict[str, Any]:
    """The benchmark: ``SEEDS`` runs of the main job and one of the control."""
    from bench.common import RESULTS_DIR

    chance = 1 / len(NEEDLE_ANSWERS)
    work = REPO / "outputs" / "bench" / ("learning-smoke" if smoke else "learning")
    overrides: tuple[str, ...] = ()
    seeds = SEEDS
    if smoke:  # two steps, one seed: the pipeline, not the result
        seeds, overrides = SEEDS[:1], ("total_train_steps=2", "evaluator.freq_steps=1")
    start = time.perf_counter()
    runs = []
    for seed in seeds:
        print(f"[bench]   learning: main run, seed {seed}", flush=True)
        runs.append(
            train_run(work / f"main-s{seed}", seed, overrides=overrides,
                      model_dir=work / f"model-s{seed}")
        )  # fmt: skip
    print(f"[bench]   learning: control, seed {CONTROL_SEED}", flush=True)
    runs.append(
        train_run(work / "control", CONTROL_SEED, control=True, overrides=overrides,
                  model_dir=work / f"model-s{CONTROL_SEED}")
    )  # fmt: skip
    total = time.perf_counter() - start
    png = plot_curves(
        {
            (f"control (shuffled memory advantages), seed {r['seed']}"
             if r["control"] else f"seed {r['seed']}"): r["steps"]
            for r in runs
        },
        (work if smoke else RESULTS_DIR) / "learning.png",
        chance=chance,
        title="Needle task, GRPO through AReaL + stand-in: held-out accuracy",
    )  # fmt: skip
    summaries = [summarise(r) for r in runs]
    main = [s for s in summaries if not s["control"]]
    control = next(s for s in summaries if s["control"])
    reached = sum((s["best_eval"] or 0) >= TARGET for s in main)
    ceiling = chance + CONTROL_MARGIN
    return {
        "smoke": smoke,
        "config": {
            "file": CONFIG.name,
            "total_train_steps": len(runs[0]["steps"]),
            "questions_per_step": config_value("train_dataset.batch_size"),
            "group_size": config_value("memagent.group_size"),
            "lr": config_value("actor.optimizer.lr"),
            "valid_questions": config_value("standin.synthetic_valid"),
            "chance": chance,
        },
        "runs": summaries,
        "curves": {
            f"{'control' if r['control'] else 'main'}-s{r['seed']}": r["steps"]
            for r in runs
        },
        "png": str(png.relative_to(REPO)) if png.is_relative_to(REPO) else str(png),
        "total_wall_s": round(total, 1),
        "targets": [
            {
                "metric": f"seeds reaching {TARGET:.2f} held-out accuracy",
                "measured": f"{reached} of {len(main)}",
                "target": f"{len(main)} of {len(main)}",
                "ratio": reached / len(main),
                "pass": None if smoke else reached == len(main),
            },
            {
                "metric": "control: final held-out accuracy",
                "measured": f"{control['final_eval']:.3f}",
                "target": f"<= chance + {CONTROL_MARGIN:.2f} = {ceiling:.2f}",
                "ratio": (control["final_eval"] or 0) / ceiling,
                "pass": None if smoke else (control["final_eval"] or 0) <= ceiling,
            },
            {
                "metric": "wall time, all runs",
                "measured": f"{total / 60:.1f} min",
                "target": f"<= {BUDGET_S // 60} min",
                "ratio": total / BUDGET_S,
                "pass": None if smoke else total <= BUDGET_S,
            },
        ],
    }

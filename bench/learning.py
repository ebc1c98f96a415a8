"""Benchmark 6: GRPO through the real stack teaches the needle task; controls do not.

Each run is the CPU main job (``python -m standin.train --config config_cpu.yaml``):
AReaL's single controller, PPOTrainer, ``MemAgentWorkflow``, the stand-in server
and a weight update every step, on the needle task with the warm-started
word-level model. Three seeds of it, and two controls on seed 0's model:

* ``shuffled``: every memory row gets the advantage of another episode of its
  group (``bench.controls``), so a memory turn is no longer paired with its own
  episode's outcome;
* ``no_memory_rows``: the memory-turn rows are not trained
  (``memagent.train_memory_turns=false``), only the final answer is.

Runs go two at a time, each in its own subprocess and folder.

    uv run python bench/run.py --only learning        # ~15 min on 2 cores
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from memagent_workflow.data.synthetic import NEEDLE_ANSWERS
from memagent_workflow.trainer.curve import first_step_at, plot_curves, read_steps

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "config_cpu.yaml"
SHUFFLED = "bench.controls.ShuffledMemoryAdvantageWorkflow"
SEEDS = (0, 1, 2)
# name -> (workflow import path or None, extra overrides); both on seed 0's model
CONTROLS = {
    "shuffled": (SHUFFLED, ()),
    "no_memory_rows": (
        None,
        ("memagent.train_memory_turns=false", "memagent.train_final_turn=true"),
    ),
}
TARGET = 0.90  # held-out accuracy every seed must reach
CONTROL_MARGIN = 0.10  # a control's final accuracy must stay within chance + this
BUDGET_S = 20 * 60
CHANCE = 1 / len(NEEDLE_ANSWERS)
# The main job's end-of-run length eval (three runs of eval.py, ~1 min), off in
# runs that measure something else (bench/length.py and test_learning check it).
NO_LENGTH_EVAL = "standin.length_eval=[]"


def wall_time_target(total_s: float, budget_s: int, smoke: bool) -> dict[str, Any]:
    """The results row for a benchmark's whole wall time against its budget."""
    return {
        "metric": "wall time, all runs",
        "measured": f"{total_s / 60:.1f} min",
        "target": f"<= {budget_s // 60} min",
        "ratio": total_s / budget_s,
        "pass": None if smoke else total_s <= budget_s,
    }


def config_value(dotted: str, path: Path = CONFIG) -> Any:
    """A value of the YAML config, e.g. ``config_value("total_train_steps")``."""
    value = yaml.safe_load(path.read_text())
    for key in dotted.split("."):
        value = value[key]
    return value


def build_model(model_dir: Path, seed: int, overrides: tuple[str, ...] = ()) -> Path:
    """The warm-started needle model of ``seed``, as the CPU job builds it
    (``overrides``: config keys, e.g. another task)."""
    from standin.cpu_job import build_model as build
    from standin.train import load_config

    argv = ["--config", str(CONFIG), f"standin.seed={seed}", f"actor.path={model_dir}"]
    build(load_config([*argv, *overrides]))
    return model_dir


def train_run(
    out: Path,
    model_dir: Path,
    seed: int,
    trainer_seed: int,
    workflow: str | None = None,
    overrides: tuple[str, ...] = (),
    timeout: float = 900,
    entry: tuple[str, ...] = ("-m", "standin.train"),
) -> dict[str, Any]:
    """One CPU main-job run in ``out``; returns its step lines and wall time.

    ``seed`` seeds the data (``standin.seed``; the model in ``model_dir`` must be
    built with it), ``trainer_seed`` AReaL and the server's sampling; runs at the
    same time need different ``trainer_seed`` (AReaL draws ports from it).
    ``workflow``: another training workflow (``bench.learning_run``);
    ``entry``: the interpreter's arguments before ``--config`` otherwise.
    """
    out.mkdir(parents=True, exist_ok=True)
    if workflow:
        entry = ("-m", "bench.learning_run", "--workflow", workflow)
    cmd = [
        sys.executable, *entry, "--config", str(CONFIG),
        f"seed={trainer_seed}", f"standin.seed={seed}", f"actor.path={model_dir}",
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
    return {"wall_s": wall, "steps": read_steps(steps_file)}


def summarise(name: str, seed: int, run: dict[str, Any]) -> dict[str, Any]:
    """Steps and seconds to 0.5 and 0.9 held-out accuracy, final and best accuracy."""
    steps = run["steps"]
    evals = [s["eval_reward"] for s in steps if s.get("eval_reward") is not None]
    out = {
        "run": name,
        "seed": seed,
        "wall_s": round(run["wall_s"], 1),
        "steps_run": len(steps),
        "first_eval": evals[0] if evals else None,
        "final_eval": evals[-1] if evals else None,
        "best_eval": max(evals) if evals else None,
    }
    for level in (0.5, 0.9):
        hit = first_step_at(steps, "eval_reward", level)
        out[f"step_to_{level}"] = hit["step"] if hit else None
        out[f"seconds_to_{level}"] = hit["elapsed_s"] if hit else None
    return out


def _jobs(overrides: tuple[str, ...]) -> list[tuple[str, int, dict]]:
    """(name, seed, train_run keyword arguments) of every run: seeds, then controls."""
    jobs = [
        (f"seed {s}", s, dict(trainer_seed=s + 1, overrides=overrides)) for s in SEEDS
    ]
    for i, (name, (workflow, extra)) in enumerate(CONTROLS.items()):
        kwargs = dict(trainer_seed=10 + i, workflow=workflow)
        jobs.append((name, SEEDS[0], {**kwargs, "overrides": (*overrides, *extra)}))
    return jobs


def run(smoke: bool = False) -> dict[str, Any]:
    """The benchmark: ``SEEDS`` runs of the main job and the ``CONTROLS``."""
    from bench.common import RESULTS_DIR

    work = REPO / "outputs" / "bench" / ("learning-smoke" if smoke else "learning")
    overrides = ("total_train_steps=2", "evaluator.freq_steps=1") if smoke else ()
    overrides = (*overrides, NO_LENGTH_EVAL)  # bench/length.py measures that
    start = time.perf_counter()
    models = {s: build_model(work / f"model-s{s}", s) for s in SEEDS}

    def one(job: tuple[str, int, dict]) -> dict[str, Any]:
        name, seed, kwargs = job
        print(f"[bench]   learning: {name} ...", flush=True)
        folder = work / name.replace(" ", "-")
        return train_run(folder, models[seed], seed, **kwargs)

    jobs = _jobs(overrides)
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(one, jobs))
    total = time.perf_counter() - start
    png = plot_curves(
        {name: r["steps"] for (name, _, _), r in zip(jobs, runs, strict=True)},
        (work if smoke else RESULTS_DIR) / "learning.png",
        chance=CHANCE,
        title="Needle task, GRPO through AReaL + stand-in: held-out accuracy",
    )
    summaries = [
        summarise(name, seed, r) for (name, seed, _), r in zip(jobs, runs, strict=True)
    ]
    main = summaries[: len(SEEDS)]
    reached = sum((s["best_eval"] or 0) >= TARGET for s in main)
    ceiling = CHANCE + CONTROL_MARGIN
    targets = [
        {
            "metric": f"seeds reaching {TARGET:.2f} held-out accuracy",
            "measured": f"{reached} of {len(main)}",
            "target": f"{len(main)} of {len(main)}",
            "ratio": reached / len(main),
            "pass": None if smoke else reached == len(main),
        }
    ]
    for s in summaries[len(SEEDS) :]:
        final = s["final_eval"] or 0
        targets.append(
            {
                "metric": f"control {s['run']}: final held-out accuracy",
                "measured": f"{final:.3f}",
                "target": f"<= chance + {CONTROL_MARGIN:.2f} = {ceiling:.2f}",
                "ratio": final / ceiling,
                "pass": None if smoke else final <= ceiling,
            }
        )
    targets.append(wall_time_target(total, BUDGET_S, smoke))
    return {
        "smoke": smoke,
        "config": {
            "file": CONFIG.name,
            "total_train_steps": len(runs[0]["steps"]),
            "questions_per_step": config_value("train_dataset.batch_size"),
            "group_size": config_value("memagent.group_size"),
            "lr": config_value("actor.optimizer.lr"),
            "valid_questions": config_value("standin.synthetic_valid"),
            "chance": CHANCE,
            "parallel_runs": 2,
        },
        "runs": summaries,
        "png": str(png.relative_to(REPO)) if png.is_relative_to(REPO) else str(png),
        "total_wall_s": round(total, 1),
        "targets": targets,
    }

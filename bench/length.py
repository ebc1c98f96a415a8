"""Benchmark 7: trained on 2-chunk documents, read at 1 to 256 chunks.

Each run is the CPU main job as it is (``python -m standin.train --config
config_cpu.yaml``: AReaL's single controller, the stand-in, GRPO on needle
questions of ``standin.needle_chunks`` chunks), whose end-of-run length eval
(``standin.length_eval``, through ``examples/eval.py``, with the memory-wiped
row) is widened here to 1 to 256 chunks. Three seeds, one after the other
(each run's evaluation already keeps both cores busy).

    uv run python bench/run.py --only length
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bench.learning import (
    CHANCE,
    CONFIG,
    REPO,
    build_model,
    config_value,
    train_run,
    wall_time_target,
)
from memagent_workflow.eval.length_table import plot_length_table
from memagent_workflow.eval.results import read_timing

SEEDS = (0, 1, 2)
LENGTHS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
TRAINED_TARGET = 0.90  # at the training length
LONG_TARGET = 0.80  # at 64x the training length and beyond
CONTROL_MARGIN = 0.10  # warm start and memory wiped: at most chance + this
BUDGET_S = 60 * 60
COST_BASE = 8  # chunks: below it, each length's fixed start-up dominates its time
COST_SPREAD = 1.5  # wall per turn at the longest length, at most this x at COST_BASE


def ms_per_turn(timing: list[dict], lengths: tuple[int, ...]) -> list[float | None]:
    """Eval wall time per turn (N memory turns and the answer per question) at
    each of ``lengths`` chunks, from the eval's ``timing.jsonl`` records."""
    by_length: dict[int, list[float]] = {}
    for t in timing:
        n = int(t["length"])
        by_length.setdefault(n, []).append(
            1000 * float(t["wall_s"]) / (int(t["samples"]) * (n + 1))
        )
    return [
        sum(by_length[n]) / len(by_length[n]) if n in by_length else None
        for n in lengths
    ]


def overrides(lengths: tuple[int, ...]) -> tuple[str, ...]:
    return (
        f"standin.length_eval=[{','.join(map(str, lengths))}]",
        "standin.length_eval_wiped=true",
    )


def plot_seeds(tables: dict[int, dict[str, Any]], png: Path, train_chunks: int) -> Path:
    """Every seed's rows in one figure (row = colour, seed = marker)."""
    merged: dict[str, Any] = {"chunks": next(iter(tables.values()))["chunks"]}
    for seed, table in tables.items():
        for label in ("trained", "warm_start", "memory_wiped"):
            merged[f"{label} (seed {seed})"] = table[label]
    return plot_length_table(
        merged,
        png,
        chance=CHANCE,
        train_chunks=train_chunks,
        title=f"Needle task: trained at {train_chunks} chunks, read at 1-256",
    )


def targets(tables: dict[int, dict[str, Any]], k: int, smoke: bool) -> list[dict]:
    out = []
    for seed, t in tables.items():
        acc = dict(zip(t["chunks"], t["trained"], strict=True))
        long = [n for n in t["chunks"] if n >= 64 * k]
        worst_long = min((acc[n] for n in long), default=None)
        out.append(
            {
                "metric": f"seed {seed}: trained at {k} chunks, accuracy there",
                "measured": f"{acc.get(k, 0):.2f}",
                "target": f">= {TRAINED_TARGET:.2f}",
                "ratio": (acc.get(k) or 0) / TRAINED_TARGET,
                "pass": None if smoke else (acc.get(k) or 0) >= TRAINED_TARGET,
            }
        )
        out.append(
            {
                "metric": f"seed {seed}: worst accuracy at >= 64x ({long} chunks)",
                "measured": "-" if worst_long is None else f"{worst_long:.2f}",
                "target": f">= {LONG_TARGET:.2f}",
                "ratio": (worst_long or 0) / LONG_TARGET,
                "pass": None if smoke else (worst_long or 0) >= LONG_TARGET,
            }
        )
        costs = dict(zip(t["chunks"], t.get("ms_per_turn", []), strict=False))
        if costs.get(COST_BASE) and costs.get(max(costs)):
            spread = costs[max(costs)] / costs[COST_BASE]
            out.append(
                {
                    "metric": f"seed {seed}: eval wall per turn, {max(costs)} vs "
                    f"{COST_BASE} chunks",
                    "measured": f"{costs[max(costs)]:.2f} / {costs[COST_BASE]:.2f} ms",
                    "target": f"ratio <= {COST_SPREAD}",
                    "ratio": spread / COST_SPREAD,
                    "pass": None if smoke else spread <= COST_SPREAD,
                }
            )
        for label in ("warm_start", "memory_wiped"):
            worst = max(v for v in t[label] if v is not None)
            ceiling = CHANCE + CONTROL_MARGIN
            out.append(
                {
                    "metric": f"seed {seed}: {label}, highest accuracy at any length",
                    "measured": f"{worst:.2f}",
                    "target": f"<= chance + {CONTROL_MARGIN:.2f} = {ceiling:.2f}",
                    "ratio": worst / ceiling,
                    "pass": None if smoke else worst <= ceiling,
                }
            )
    return out


def run(smoke: bool = False) -> dict[str, Any]:
    """Three seeds of the main job, each evaluated at 1 to 256 chunks."""
    from bench.common import RESULTS_DIR

    work = REPO / "outputs" / "bench" / ("length-smoke" if smoke else "length")
    lengths = (1, 2) if smoke else LENGTHS
    extra = overrides(lengths)
    if smoke:
        extra = (*extra, "total_train_steps=2", "saver.freq_steps=2")
    k = config_value("standin.needle_chunks")
    start = time.perf_counter()
    tables, runs = {}, []
    for seed in SEEDS[:1] if smoke else SEEDS:
        print(f"[bench]   length: seed {seed} ...", flush=True)
        model = build_model(work / f"model-s{seed}", seed)
        folder = work / f"seed-{seed}"
        r = train_run(folder, model, seed, seed + 1, overrides=extra, timeout=3600)
        table_file = next((folder / "areal").rglob("length_table.json"))
        tables[seed] = json.loads(table_file.read_text())
        timing = read_timing(table_file.parent / "length_eval" / "trained")
        tables[seed]["ms_per_turn"] = ms_per_turn(timing, lengths)
        evals = [
            s["eval_reward"] for s in r["steps"] if s.get("eval_reward") is not None
        ]
        runs.append(
            {
                "seed": seed,
                "wall_s": round(r["wall_s"], 1),
                "train_s": round(r["steps"][-1]["elapsed_s"], 1),
                "final_eval": evals[-1] if evals else None,
                "table": tables[seed],
            }
        )
    total = time.perf_counter() - start
    png = plot_seeds(tables, (work if smoke else RESULTS_DIR) / "length.png", k)
    out_targets = targets(tables, k, smoke)
    out_targets.append(wall_time_target(total, BUDGET_S, smoke))
    return {
        "smoke": smoke,
        "config": {
            "file": CONFIG.name,
            "train_chunks": k,
            "lengths": list(lengths),
            "eval_questions": config_value("standin.synthetic_valid"),
            "chance": CHANCE,
        },
        "runs": runs,
        "png": str(png.relative_to(REPO)) if png.is_relative_to(REPO) else str(png),
        "total_wall_s": round(total, 1),
        "targets": out_targets,
    }

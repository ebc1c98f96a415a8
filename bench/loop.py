"""Benchmark 4: the training loop, asynchronous against the original's schedule.

Each configuration trains ``steps`` batches of ``batch`` questions (x
``group_size`` episodes) against the simulated engine with a simulated
trainer, through the loops of :mod:`bench.training_loops`: the original verl
MemAgent loop (lockstep rollout of the whole batch, then train) and AReaL's
loop at ``max_head_offpolicyness`` 0 (synchronous), 1, 2 and 4, across
train/rollout ratios and question mixes. Episodes/s are counted after
``warmup`` steps (the first rollout can never overlap a train step): the
loops' steady state. The ideal is perfect overlap: every step takes
max(engine-bound rollout, train step).

The loops sleep far more than they compute, so each mix and ratio runs in its
own process, side by side.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from bench.common import make_workflow
from bench.engines import CostModel
from bench.loop_config import ORIGINAL, Config, label
from bench.loop_plan import plan, predicted
from bench.training_loops import run_areal, run_original
from bench.vocab import load_tokenizer
from bench.workload import Mix

SMOKE = Config(
    batch=2,
    group_size=2,
    slots=4,
    concurrency=1,
    steps=3,
    ratios=(3.0,),
    offpolicyness=(0, 1),
    mixes=(Mix("toy mix", (1, 3)),),
    cost=CostModel().scaled(0.5),
)


def run_mix(
    cfg: Config, mix: Mix, ratios: tuple[float, ...] | None = None
) -> list[dict[str, Any]]:
    """Every loop at each ratio (default: all of the config's) on one mix."""
    tokenizer = load_tokenizer()
    workflow = make_workflow(
        tokenizer,
        chunk_tokens=cfg.chunk_tokens,
        max_memory_tokens=cfg.memory_budget,
        max_final_tokens=cfg.final_budget,
        group_size=cfg.group_size,
    )
    p = plan(cfg, mix, workflow, tokenizer)
    rows = []
    for ratio in ratios or cfg.ratios:
        loops = {ORIGINAL: run_original(cfg, p, workflow, tokenizer, ratio)}
        print(_progress(mix, ratio, ORIGINAL, loops[ORIGINAL]), flush=True)
        for k in cfg.offpolicyness:
            loops[str(k)] = run_areal(cfg, p, workflow, tokenizer, k, ratio)
            print(_progress(mix, ratio, str(k), loops[str(k)]), flush=True)
        rows.append(
            {
                "mix": mix.describe(),
                "ratio": ratio,
                "calibration": asdict(p.calib),
                "predicted": predicted(cfg, p, ratio),
                "loops": loops,
            }
        )
    return rows


def _progress(mix: Mix, ratio: float, loop: str, res: dict[str, Any]) -> str:
    return (
        f"[bench]     {mix.name}, ratio {ratio:g}, {label(loop)}: "
        f"{res['episodes_per_s']:.2f} episodes/s ({res['wall_s']:.0f} s)"
    )


def run(
    smoke: bool = False, cfg: Config | None = None, parallel: bool | None = None
) -> dict[str, Any]:
    """Every mix x ratio x loop; by default each mix and ratio in its own process,
    side by side (they mostly sleep), except in a smoke run."""
    cfg = cfg or (SMOKE if smoke else Config())
    jobs = [(cfg, mix, ratio) for mix in cfg.mixes for ratio in cfg.ratios]
    workers_cpu = 0.0
    if parallel if parallel is not None else not smoke:
        rows, workers_cpu = _in_processes(jobs)
    else:
        rows = [row for job in jobs for row in _job(*job)]
    return {
        "smoke": smoke,
        "workers_cpu_s": workers_cpu,
        "config": {**asdict(cfg), "mixes": [m.describe() for m in cfg.mixes]},
        "rows": rows,
        "targets": _targets(cfg, rows),
    }


def _job(cfg: Config, mix: Mix, ratio: float) -> list[dict[str, Any]]:
    return run_mix(cfg, mix, (ratio,))


def _in_processes(
    jobs: list[tuple[Config, Mix, float]],
) -> tuple[list[dict[str, Any]], float]:
    """One process per job, forked from a server that has imported AReaL once
    (a fresh interpreter spends ~12 s of CPU importing it). Returns the rows and
    the CPU time of the server and its workers (not children of this process,
    so not in its own accounts)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    import psutil

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["bench.loop", "bench.training_loops", "bench.vocab"])
    with ProcessPoolExecutor(len(jobs), mp_context=ctx) as pool:
        futures = [pool.submit(_job, *job) for job in jobs]
        rows = [row for f in futures for row in f.result()]
        cpu = 0.0
        for proc in psutil.Process().children(recursive=True):
            try:
                times = proc.cpu_times()
                cpu += times.user + times.system
            except psutil.NoSuchProcess:
                pass
    return rows, cpu


def _targets(cfg: Config, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """AReaL at the config's bound (2; else the loosest run), measured, over the
    original loop's schedule at zero driver cost (the original at its best)."""
    k = "2" if 2 in cfg.offpolicyness else str(max(cfg.offpolicyness))
    out = []
    for mix in dict.fromkeys(r["mix"] for r in rows):
        mine = [r for r in rows if r["mix"] == mix]
        gains = [
            r["loops"][k]["episodes_per_s"] / r["predicted"]["original_zero_cost"]
            for r in mine
        ]
        measured = [
            f"{g:.2f}x at ratio {r['ratio']:g}"
            for g, r in zip(gains, mine, strict=True)
        ]
        out.append(
            {
                "metric": f"training loop, AReaL offpolicyness {k} / original at zero "
                f"driver cost, {mix}",
                "measured": ", ".join(measured),
                "target": "reported",
                "ratio": max(gains),
                "pass": None,
            }
        )
    return out

"""The training loops the loop benchmark compares, each timed step by step.

* :func:`run_original`: the verl MemAgent loop. The step's whole batch is in
  flight, one turn per step per episode (:mod:`bench.lockstep`); then train.
* :func:`run_areal`: the loop of AReaL's ``PPOTrainer.train`` over its real
  ``WorkflowExecutor`` and ``StalenessManager``: take a batch, train, bump the
  version; generation goes on meanwhile as far as the staleness bound admits.

The train step is a sleep (:mod:`bench.train_cost`); the engine is the
simulated one, so no CPU is spent on generation or training.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from areal.api import RolloutWorkflow

from bench.engines import SimEngine
from bench.lockstep import Trace, lockstep_batch
from bench.loop_config import Config
from bench.loop_plan import Plan, make_engine
from bench.train_cost import batch_size, train_seconds


class Admissions(RolloutWorkflow):
    """The workflow, noting the engine's version whenever a question starts."""

    def __init__(self, inner):
        self.inner = inner
        self.versions: list[int] = []

    async def arun_episode(self, engine, data):
        self.versions.append(engine.get_version())
        return await self.inner.arun_episode(engine, data)


def admission_violations(versions: list[int], offpolicyness: int, batch: int) -> int:
    """Starts beyond StalenessManager's bound: the i-th start (from 0) needs
    i < (offpolicyness + version + 1) x batch."""
    bound = offpolicyness + 1
    return sum(1 for i, v in enumerate(versions) if i >= (bound + v) * batch)


def staleness(trajectories: list[dict[str, Any]], version: int) -> dict[str, Any]:
    """Of a batch trained at ``version``: each question's head staleness (its
    oldest generated token), and the summed staleness of all generated tokens."""
    heads, token_sum, token_n = [], 0, 0
    for t in trajectories:
        generated = (t["versions"] >= 0) & t["attention_mask"].bool()  # not padding
        v = t["versions"][generated]
        heads.append(version - int(v.min()))
        token_sum += int((version - v).sum())
        token_n += int(v.numel())
    return {"heads": heads, "token_sum": token_sum, "token_n": token_n}


def _step(cfg: Config, p: Plan, ratio: float, trajs, version: int, wait_s: float):
    rows, tokens = batch_size(trajs)
    train = train_seconds(cfg.train, p.calib, ratio, rows, tokens)
    record = {"wait_s": wait_s, "train_s": train, "rows": rows, "tokens": tokens}
    return train, {**record, **staleness(trajs, version)}


def run_areal(
    cfg: Config, p: Plan, workflow, tokenizer, offpolicyness: int, ratio: float
) -> dict[str, Any]:
    """AReaL's trainer loop over its ``WorkflowExecutor``."""
    from areal.api.cli_args import InferenceEngineConfig
    from areal.infra.workflow_executor import WorkflowExecutor
    from torchdata.stateful_dataloader import StatefulDataLoader

    engine = make_engine(cfg, tokenizer)
    executor = WorkflowExecutor(
        InferenceEngineConfig(
            backend="sglang:d1",
            consumer_batch_size=cfg.batch,
            max_concurrent_rollouts=cfg.concurrency,
            max_head_offpolicyness=offpolicyness,
        ),
        engine,
    )
    executor.initialize(train_data_parallel_size=1)
    manager_bound = executor.staleness_manager.max_staleness
    loader = StatefulDataLoader(
        p.items, batch_size=cfg.batch, shuffle=False, collate_fn=lambda x: x
    )
    logged = Admissions(workflow)
    steps, ends = [], []
    c0, t0 = time.process_time(), time.perf_counter()
    try:
        for step in range(cfg.steps):
            t = time.perf_counter()
            trajs = executor.prepare_batch(loader, logged)
            train, rec = _step(cfg, p, ratio, trajs, step, time.perf_counter() - t)
            time.sleep(train)
            # PPOTrainer.train: pause, update the weights, set the version, resume
            # (resuming is what wakes the executor to admit the next questions).
            # The update itself is instantaneous here.
            executor.pause()
            engine.set_version(step + 1)
            executor.resume()
            steps.append(rec)
            ends.append(time.perf_counter() - t0)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        executor.destroy()
    out = summary(cfg, steps, ends, engine, wall, cpu)
    heads = [h for s in steps[cfg.warmup :] for h in s["heads"]]
    out["beyond_bound"] = sum(h > offpolicyness for h in heads) / len(heads)
    out["admission_violations"] = admission_violations(
        logged.versions, offpolicyness, cfg.batch
    )
    out["questions_started"] = len(logged.versions)
    out["max_staleness"] = manager_bound
    return out


def run_original(cfg: Config, p: Plan, workflow, tokenizer, ratio: float) -> dict:
    """Lockstep rollout of the whole batch, then train: the verl MemAgent loop."""
    from bench.common import run_async
    from bench.schedule import lockstep_violations

    engine = make_engine(cfg, tokenizer)
    trace: Trace = []
    steps, ends = [], []

    async def loop(t0: float) -> None:
        for step in range(cfg.steps):
            t = time.perf_counter()
            batch = p.items[p.batch(step, cfg.batch)]
            out = await lockstep_batch(workflow, engine, batch, step, trace)
            wait = time.perf_counter() - t
            train, rec = _step(cfg, p, ratio, out.trajectories, step, wait)
            await asyncio.sleep(train)
            engine.set_version(step + 1)
            steps.append(rec)
            ends.append(time.perf_counter() - t0)

    c0, t0 = time.process_time(), time.perf_counter()
    run_async(loop(t0))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    out = summary(cfg, steps, ends, engine, wall, cpu)
    out["lockstep_violations"] = lockstep_violations(trace)
    return out


def summary(cfg: Config, steps, ends, engine: SimEngine, wall, cpu) -> dict:
    """Steady-state throughput (after the warm-up steps) and what it cost."""
    measured = steps[cfg.warmup :]
    heads = [h for s in measured for h in s["heads"]]
    episodes = len(measured) * cfg.batch * cfg.group_size
    window = ends[-1] - (ends[cfg.warmup - 1] if cfg.warmup else 0.0)
    return {
        "episodes_per_s": episodes / window,
        "window_s": window,
        "wall_s": wall,
        "cpu_s": cpu,
        "cpu_share": cpu / wall,
        "rollout_wait_s": sum(s["wait_s"] for s in measured) / len(measured),
        "train_s": sum(s["train_s"] for s in measured) / len(measured),
        "slot_utilisation": engine.busy_s / (engine.slots * wall),
        "staleness_max": max(heads),
        "staleness_mean": sum(heads) / len(heads),
        "token_staleness_mean": sum(s["token_sum"] for s in measured)
        / sum(s["token_n"] for s in measured),
        "steps": steps,
        **engine.loop_stats(),
    }

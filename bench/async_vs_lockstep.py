"""Benchmark 2: AReaL's asynchronous rollout against a lockstep driver.

Both drivers run the same questions (RULER-like chunk counts, a few to a few
hundred) with the same group size through the same :class:`SimEngine` (same
slots, same cost model, same per-episode output lengths):

* **async**: AReaL's ``WorkflowExecutor`` runs ``MemAgentWorkflow.arun_episode``
  with at most ``concurrency`` questions in flight; every episode advances as
  soon as its own turn returns.
* **lockstep, small batch**: the batch-by-turn scheme of the original verl
  implementation (:mod:`bench.lockstep`), but on batches of only
  ``concurrency`` questions. The original puts its whole step batch in flight;
  that shape is replayed here at zero driver cost (all questions as one batch),
  and at the original's own scale in :mod:`bench.replay`.

The engine-bound ideal is the total service time divided by the slots.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.common import make_workflow, run_async
from bench.engines import CostModel, OutputModel, SimEngine
from bench.lockstep import Trace, lockstep_batch
from bench.schedule import async_schedule_s, lockstep_schedule_s, lockstep_violations
from bench.vocab import load_tokenizer, tokens_per_char
from bench.workload import RULER, Mix, make_items

TARGET_VS_LOCKSTEP = 1.5
TARGET_VS_IDEAL = 0.9


@dataclass(frozen=True)
class Config:
    questions: int = 64
    group_size: int = 4
    slots: int = 8
    concurrency: int = 4  # questions in flight (async) = questions per batch (lockstep)
    chunk_tokens: int = 256
    chunk_counts: tuple[int, ...] = RULER.chunk_counts
    memory_budget: int = 1024
    final_budget: int = 512
    cost: CostModel = field(default_factory=CostModel)
    outputs: OutputModel = field(default_factory=OutputModel)
    seed: int = 0


SMOKE = Config(questions=4, group_size=2, slots=4, concurrency=2, chunk_counts=(1, 3))


def questions(cfg: Config, tokenizer) -> list[dict[str, Any]]:
    """Questions whose contexts have the configured chunk counts, shuffled."""
    counts = Mix("mix", cfg.chunk_counts).counts(cfg.questions, cfg.seed)
    return make_items(counts, cfg.chunk_tokens, tokens_per_char(tokenizer))


def _engine_stats(engine: SimEngine, wall: float, cpu: float) -> dict[str, Any]:
    episodes = engine.episodes_done
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "episodes": episodes,
        "episodes_per_s": episodes / wall,
        "requests": engine.requests,
        "work_s": engine.work_s,
        "slot_utilisation": engine.work_s / (engine.slots * wall),
        "slot_hold_over_service": engine.busy_s / max(engine.work_s, 1e-9),
        "mean_slot_wait_ms": engine.wait_s / max(engine.requests, 1) * 1e3,
        "output_tokens": engine.output_tokens,
        **engine.loop_stats(),
    }


def run_executor(cfg: Config, engine: SimEngine, workflow, items) -> dict[str, Any]:
    """AReaL's ``WorkflowExecutor.rollout_batch`` over all questions."""
    from areal.api.cli_args import InferenceEngineConfig
    from areal.infra.workflow_executor import WorkflowExecutor

    config = InferenceEngineConfig(
        backend="sglang:d1",
        consumer_batch_size=len(items),  # one training batch: no staleness wait
        max_concurrent_rollouts=cfg.concurrency,
        max_head_offpolicyness=0,
    )
    engine.reset()
    executor = WorkflowExecutor(config, engine)
    executor.initialize(train_data_parallel_size=1)
    try:
        c, t = time.process_time(), time.perf_counter()
        trajs = executor.rollout_batch(items, workflow)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
    finally:
        executor.destroy()
    out = _engine_stats(engine, wall, cpu)
    out["trajectories"] = len(trajs)
    out["rows"] = sum(int(t["input_ids"].shape[0]) for t in trajs)
    return out


async def _lockstep(cfg: Config, engine: SimEngine, workflow, items) -> dict[str, Any]:
    trace: Trace = []
    read_s, rows, trajectories, chunk_counts, services = 0.0, 0, 0, [], []
    for b, start in enumerate(range(0, len(items), cfg.concurrency)):
        out = await lockstep_batch(
            workflow, engine, items[start : start + cfg.concurrency], b, trace
        )
        read_s += out.read_s
        rows += sum(int(t["input_ids"].shape[0]) for t in out.trajectories)
        trajectories += len(out.trajectories)
        chunk_counts += out.chunk_counts
        services += out.services
    return {
        "trace": trace,
        "read_s": read_s,
        "rows": rows,
        "trajectories": trajectories,
        "chunk_counts": chunk_counts,
        "services": services,
    }


def run_lockstep(cfg: Config, engine: SimEngine, workflow, items) -> dict[str, Any]:
    """The synchronous batch-by-turn driver over all questions."""
    engine.reset()
    c, t = time.process_time(), time.perf_counter()
    res = run_async(_lockstep(cfg, engine, workflow, items))
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    out = _engine_stats(engine, wall, cpu)
    trace = res.pop("trace")
    out.update(res)
    out["steps"] = len({(b, k) for b, k, _, _ in trace})
    out["turns_traced"] = len(trace)
    out["lockstep_violations"] = lockstep_violations(trace)
    return out


def run(smoke: bool = False, cfg: Config | None = None) -> dict[str, Any]:
    """Both drivers on the same work; episodes/s against each other and the ideal."""
    cfg = cfg or (SMOKE if smoke else Config())
    tokenizer = load_tokenizer()
    items = questions(cfg, tokenizer)
    workflow = make_workflow(
        tokenizer,
        chunk_tokens=cfg.chunk_tokens,
        max_memory_tokens=cfg.memory_budget,
        max_final_tokens=cfg.final_budget,
        group_size=cfg.group_size,
    )
    engine = SimEngine(
        tokenizer, cfg.slots, cfg.memory_budget, cfg.cost, cfg.outputs, cfg.seed
    )
    run_async(workflow.read_document(items[0]))  # warm the tokenizer's threads
    async_res = run_executor(cfg, engine, workflow, items)
    lock_res = run_lockstep(cfg, engine, workflow, items)
    work = lock_res["work_s"]
    ideal_s = work / cfg.slots
    ideal = {"wall_s": ideal_s, "episodes_per_s": lock_res["episodes"] / ideal_s}
    services = lock_res.pop("services")
    n_q = len(services)
    zero_cost = {
        "async_s": async_schedule_s(services, cfg.slots, cfg.concurrency),
        "lockstep_s": lockstep_schedule_s(services, cfg.slots, cfg.concurrency),
        "async_whole_batch_s": async_schedule_s(services, cfg.slots, n_q),
        "lockstep_whole_batch_s": lockstep_schedule_s(services, cfg.slots, n_q),
    }
    vs_lock = async_res["episodes_per_s"] / lock_res["episodes_per_s"]
    vs_ideal = async_res["episodes_per_s"] / ideal["episodes_per_s"]
    counts = lock_res["chunk_counts"]
    return {
        "smoke": smoke,
        "config": {**asdict(cfg), "chunk_counts_actual": sorted(counts)},
        "same_work": abs(async_res["work_s"] - work) <= 1e-6 * work,
        "async": async_res,
        "lockstep": lock_res,
        "ideal": ideal,
        "zero_driver_cost": zero_cost,
        "targets": [
            {
                "metric": f"async / small-batch lockstep ({cfg.concurrency} questions "
                "per batch, not the original's shape) episodes/s",
                "measured": f"{async_res['episodes_per_s']:.2f} vs "
                f"{lock_res['episodes_per_s']:.2f} ep/s",
                "target": f">= {TARGET_VS_LOCKSTEP:g}x",
                "ratio": vs_lock,
                "pass": vs_lock >= TARGET_VS_LOCKSTEP,
            },
            {
                "metric": "async / engine-bound ideal episodes/s",
                "measured": f"{async_res['episodes_per_s']:.2f} vs "
                f"{ideal['episodes_per_s']:.2f} ep/s",
                "target": f">= {TARGET_VS_IDEAL:.0%}",
                "ratio": vs_ideal,
                "pass": vs_ideal >= TARGET_VS_IDEAL,
            },
        ],
    }

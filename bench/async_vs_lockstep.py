"""Benchmark 2: AReaL's asynchronous rollout against a lockstep driver.

Both drivers run the same questions (RULER-like chunk counts, a few to a few
hundred) with the same group size through the same :class:`SimEngine` (same
slots, same cost model, same per-episode output lengths):

* **async**: AReaL's ``WorkflowExecutor`` runs ``MemAgentWorkflow.arun_episode``
  with at most ``concurrency`` questions in flight; every episode advances as
  soon as its own turn returns.
* **lockstep**: the synchronous scheme of the original verl implementation.
  ``concurrency`` questions form a batch; turn k of every active episode is
  sent at once and the driver waits for all of them before turn k+1. Episodes
  with fewer chunks drop out early; the final turns go out together at the end.

The engine-bound ideal is the total service time divided by the slots.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.common import item, make_workflow, run_async
from bench.corpus import build_context
from bench.engines import CostModel, OutputModel, SimEngine
from bench.schedule import async_schedule_s, lockstep_schedule_s, lockstep_violations
from bench.vocab import load_tokenizer, tokens_per_char

TARGET_VS_LOCKSTEP = 1.5
TARGET_VS_IDEAL = 0.9


@dataclass(frozen=True)
class Config:
    questions: int = 64
    group_size: int = 4
    slots: int = 8
    concurrency: int = 4  # questions in flight (async) = questions per batch (lockstep)
    chunk_tokens: int = 256
    chunk_counts: tuple[int, ...] = (2, 4, 8, 16, 32, 64, 128, 256)
    memory_budget: int = 1024
    final_budget: int = 512
    cost: CostModel = field(default_factory=CostModel)
    outputs: OutputModel = field(default_factory=OutputModel)
    seed: int = 0


SMOKE = Config(questions=4, group_size=2, slots=4, concurrency=2, chunk_counts=(1, 3))


def make_items(cfg: Config, tokenizer) -> list[dict[str, Any]]:
    """Questions whose contexts have the configured chunk counts, shuffled."""
    tpc = tokens_per_char(tokenizer)
    counts = [cfg.chunk_counts[q % len(cfg.chunk_counts)] for q in range(cfg.questions)]
    random.Random(cfg.seed).shuffle(counts)
    return [
        item(f"q{q}", build_context(n * cfg.chunk_tokens - 8, tpc, seed=1000 + q))
        for q, n in enumerate(counts)
    ]


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


@dataclass
class _Live:
    """One episode inside the lockstep driver."""

    doc: Any
    memory: Any
    rid: str = field(default_factory=lambda: uuid.uuid4().hex)
    ep: Any = None


async def _lockstep(cfg: Config, engine: SimEngine, workflow, items) -> dict[str, Any]:
    from memagent_workflow.advantage import group_advantages
    from memagent_workflow.rows import pad_rows
    from memagent_workflow.workflow import Episode

    wf = workflow
    trace: list[tuple[int, int, float, float]] = []  # (batch, step, start, end)
    read_s, rows, trajectories, chunk_counts = 0.0, 0, 0, []
    groups: list[list[_Live]] = []

    async def memory_turn(e: _Live, b: int, k: int) -> None:
        t0 = time.perf_counter()
        prompt = e.doc.memory_prompt.build(e.memory, e.doc.chunks[k])
        turn = await wf.generate(engine, e.rid, prompt, wf.memory_gconfig)
        e.memory = wf.next_memory(turn, e.ep)
        wf.account(e.ep, turn, keep_turns=True)
        trace.append((b, k, t0, time.perf_counter()))

    async def final_turn(e: _Live, b: int, k: int) -> None:
        t0 = time.perf_counter()
        prompt = e.doc.final_prompt.build(e.memory)
        turn = await wf.generate(
            engine, e.rid, prompt, wf.final_gconfig, trainable=wf.train_final_turn
        )
        wf.account(e.ep, turn, keep_turns=True)
        e.ep.answer = wf.tokenizer.decode(
            wf.strip_stop(turn.output_ids), skip_special_tokens=True
        )
        trace.append((b, k, t0, time.perf_counter()))

    for b, start in enumerate(range(0, len(items), cfg.concurrency)):
        t = time.perf_counter()
        docs = await asyncio.gather(
            *(wf.read_document(it) for it in items[start : start + cfg.concurrency])
        )
        read_s += time.perf_counter() - t
        chunk_counts += [len(d.chunks) for d in docs]
        live = [
            _Live(doc=d, memory=wf.initial_memory, ep=Episode())
            for d in docs
            for _ in range(cfg.group_size)
        ]
        steps = max(len(d.chunks) for d in docs)
        for k in range(steps):
            await asyncio.gather(
                *(memory_turn(e, b, k) for e in live if k < len(e.doc.chunks))
            )
        await asyncio.gather(*(final_turn(e, b, steps) for e in live))
        for q, doc in enumerate(docs):
            group = live[q * cfg.group_size : (q + 1) * cfg.group_size]
            groups.append(group)
            rewards = [wf.reward_fn(e.ep.answer, doc.answers) for e in group]
            advs = group_advantages(rewards, std_norm=wf.adv_std_norm)
            turns = [t for e in group for t in e.ep.turns]
            row_advs = [a for e, a in zip(group, advs, strict=True) for _ in e.ep.turns]
            rows += int(pad_rows(turns, row_advs)["input_ids"].shape[0])
            trajectories += 1
    return {
        "trace": trace,
        "read_s": read_s,
        "rows": rows,
        "trajectories": trajectories,
        "chunk_counts": chunk_counts,
        "services": [[engine.services[e.rid] for e in g] for g in groups],
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
    items = make_items(cfg, tokenizer)
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
    zero_cost = {
        "async_s": async_schedule_s(services, cfg.slots, cfg.concurrency),
        "lockstep_s": lockstep_schedule_s(services, cfg.slots, cfg.concurrency),
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
                "metric": "async / lockstep episodes/s",
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

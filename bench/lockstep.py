"""The rollout schedule of the original verl MemAgent: batch by turn.

A batch of questions is read, every question gets ``group_size`` episodes,
and the episodes advance in lockstep: turn k of every active episode is sent
at once and the driver waits for all of them before turn k+1. Episodes with
fewer chunks drop out early; the final turns go out together at the end.
The turns are the workflow's own (``MemAgentWorkflow.generate`` and friends),
so the requests are exactly those of the asynchronous driver.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

Trace = list[tuple[int, int, float, float]]  # (batch, step, start, end)


@dataclass
class _Live:
    """One episode inside the lockstep driver."""

    doc: Any
    memory: Any
    ep: Any
    rid: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass
class LockstepBatch:
    """What one lockstep batch produced."""

    trajectories: list[dict[str, Any]]  # one padded-rows dict per question
    chunk_counts: list[int]
    services: list[list[list[float]]]  # question -> episode -> service per turn
    read_s: float
    steps: int


async def lockstep_batch(
    workflow, engine, items: list[dict[str, Any]], batch: int, trace: Trace
) -> LockstepBatch:
    """Run ``items`` (one batch) turn by turn; returns each question's rows."""
    from memagent_workflow.advantage import group_advantages
    from memagent_workflow.rows import pad_rows
    from memagent_workflow.workflow import Episode

    wf, group = workflow, workflow.group_size

    async def memory_turn(e: _Live, k: int) -> None:
        t0 = time.perf_counter()
        prompt = e.doc.memory_prompt.build(e.memory, e.doc.chunks[k])
        turn = await wf.generate(engine, e.rid, prompt, wf.memory_gconfig, e.ep)
        e.memory = wf.next_memory(turn, e.ep)
        e.ep.add_turn(turn, keep=True)
        trace.append((batch, k, t0, time.perf_counter()))

    async def final_turn(e: _Live, k: int) -> None:
        t0 = time.perf_counter()
        prompt = e.doc.final_prompt.build(e.memory)
        turn = await wf.generate(
            engine,
            e.rid,
            prompt,
            wf.final_gconfig,
            e.ep,
            trainable=wf.train_final_turn,
        )
        e.ep.add_turn(turn, keep=True)
        e.ep.answer = wf.tokenizer.decode(
            wf.strip_stop(turn.output_ids), skip_special_tokens=True
        )
        trace.append((batch, k, t0, time.perf_counter()))

    t = time.perf_counter()
    docs = await asyncio.gather(*(wf.read_document(it) for it in items))
    read_s = time.perf_counter() - t
    live = [
        _Live(doc=d, memory=wf.initial_memory, ep=Episode())
        for d in docs
        for _ in range(group)
    ]
    steps = max(len(d.chunks) for d in docs)
    for k in range(steps):
        await asyncio.gather(
            *(memory_turn(e, k) for e in live if k < len(e.doc.chunks))
        )
    await asyncio.gather(*(final_turn(e, steps) for e in live))

    trajectories, services = [], []
    for q, doc in enumerate(docs):
        episodes = live[q * group : (q + 1) * group]
        rewards = [wf.reward_fn(e.ep.answer, doc.answers) for e in episodes]
        advs = group_advantages(rewards, std_norm=wf.adv_std_norm)
        turns = [t for e in episodes for t in e.ep.turns]
        row_advs = [a for e, a in zip(episodes, advs, strict=True) for _ in e.ep.turns]
        trajectories.append(pad_rows(turns, row_advs))
        services.append([engine.services[e.ep.id] for e in episodes])
    return LockstepBatch(
        trajectories=trajectories,
        chunk_counts=[len(d.chunks) for d in docs],
        services=services,
        read_s=read_s,
        steps=steps + 1,
    )

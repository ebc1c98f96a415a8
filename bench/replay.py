"""Benchmark 3: the original's rollout schedule at its own scale, replayed.

One training step of the original verl MemAgent puts its whole batch in
flight: ``train_dataset.batch_size`` (128) questions x ``group_size`` (16)
episodes = 2,048 episodes, all advancing one turn per step. Running that
through the measured drivers would take ~40 s of CPU per schedule, so the
episodes' service times are drawn directly from the simulated engine's models
(:class:`~bench.engines.OutputModel`, :class:`~bench.engines.CostModel`, the
workflow's real prompt sizes) and the schedules of :mod:`bench.schedule` are
replayed at zero driver cost, at the slot counts of real engines. Benchmark 2
checks such replays against measured runs of the same drivers.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from bench.engines import CostModel, OutputModel
from bench.schedule import Work, async_schedule_s, lockstep_schedule_s
from bench.workload import RULER, TRAINING, Mix


@dataclass(frozen=True)
class Config:
    questions: int = 128  # config.yaml: train_dataset.batch_size
    group_size: int = 16  # config.yaml: memagent.group_size
    concurrency: int = 64  # config.yaml: rollout.max_concurrent_rollouts (groups)
    slots: tuple[int, ...] = (64, 256, 1024)
    mixes: tuple[Mix, ...] = (TRAINING, RULER)
    seeds: tuple[int, ...] = (0, 1, 2)
    chunk_tokens: int = 256  # as in the measured benchmarks
    memory_budget: int = 1024
    final_budget: int = 512
    cost: CostModel = field(default_factory=CostModel)
    outputs: OutputModel = field(default_factory=OutputModel)


SMOKE = Config(
    questions=8,
    group_size=4,
    concurrency=4,
    slots=(4, 16),
    mixes=(Mix("toy mix", (1, 3)),),
    seeds=(0,),
)


@dataclass(frozen=True)
class PromptSizes:
    """Prompt tokens around the memory and the chunk (the workflow's templates)."""

    memory_turn: int  # template + question, without memory and chunk
    final_turn: int  # template + question, without memory
    initial_memory: int
    answer: int  # tokens the simulated engine appends to a final answer


def prompt_sizes(tokenizer, workflow) -> PromptSizes:
    """Measure the templates of a real ``MemAgentWorkflow`` document."""
    from bench.common import item, run_async
    from bench.engines import _Outputs

    doc = run_async(workflow.read_document(item("sizes", "A short context.")))
    empty = np.zeros(0, dtype=np.int32)
    return PromptSizes(
        memory_turn=len(doc.memory_prompt.build(empty, empty)),
        final_turn=len(doc.final_prompt.build(empty)),
        initial_memory=len(workflow.initial_memory),
        answer=len(_Outputs(tokenizer).answer),
    )


def episode_services(
    rng: random.Random, chunks: int, cfg: Config, sizes: PromptSizes
) -> list[float]:
    """Service time of each turn of one episode, as :class:`SimEngine` bills it."""
    services, memory = [], sizes.initial_memory
    for _ in range(chunks):
        n = cfg.outputs.draw(rng, final=False)
        out = min(n + 1, cfg.memory_budget)  # + EOS, cut at the budget
        prompt = sizes.memory_turn + memory + cfg.chunk_tokens
        services.append(cfg.cost.service_time(prompt, out))
        memory = min(n, cfg.memory_budget)
    n = cfg.outputs.draw(rng, final=True)
    out = min(n + sizes.answer + 1, cfg.final_budget)
    services.append(cfg.cost.service_time(sizes.final_turn + memory, out))
    return services


def draw_work(mix: Mix, cfg: Config, sizes: PromptSizes, seed: int) -> Work:
    """One step's batch: questions of the mix, each with a group of episodes."""
    rng = random.Random(f"replay:{seed}")
    return [
        [episode_services(rng, n, cfg, sizes) for _ in range(cfg.group_size)]
        for n in mix.counts(cfg.questions, seed)
    ]


def replay(work: Work, slots: int, cfg: Config) -> dict[str, float]:
    """Makespans of one batch under each policy (seconds of simulated time)."""
    small = max(1, slots // cfg.group_size)
    total = sum(s for q in work for ep in q for s in ep)
    return {
        "async_s": async_schedule_s(work, slots, cfg.concurrency),
        "lockstep_whole_batch_s": lockstep_schedule_s(work, slots, len(work)),
        "lockstep_small_batch_s": lockstep_schedule_s(work, slots, small),
        "small_batch_questions": small,
        "ideal_s": total / slots,
    }


def run(smoke: bool = False, cfg: Config | None = None) -> dict[str, Any]:
    """Every mix x slot count x seed; ratios of the lockstep schedules to async."""
    from bench.common import make_workflow
    from bench.vocab import load_tokenizer

    cfg = cfg or (SMOKE if smoke else Config())
    tokenizer = load_tokenizer()
    workflow = make_workflow(
        tokenizer,
        chunk_tokens=cfg.chunk_tokens,
        max_memory_tokens=cfg.memory_budget,
        max_final_tokens=cfg.final_budget,
    )
    sizes = prompt_sizes(tokenizer, workflow)
    rows = []
    for mix in cfg.mixes:
        works = [draw_work(mix, cfg, sizes, seed) for seed in cfg.seeds]
        for slots in cfg.slots:
            runs = [replay(w, slots, cfg) for w in works]
            whole = [r["lockstep_whole_batch_s"] / r["async_s"] for r in runs]
            small = [r["lockstep_small_batch_s"] / r["async_s"] for r in runs]
            rows.append(
                {
                    "mix": mix.describe(),
                    "slots": slots,
                    "episodes": cfg.questions * cfg.group_size,
                    "turns": sum(len(ep) for q in works[0] for ep in q),
                    "runs": runs,
                    **{
                        k: statistics.mean(r[k] for r in runs)
                        for k in runs[0]
                        if k.endswith("_s")
                    },
                    "small_batch_questions": runs[0]["small_batch_questions"],
                    "whole_over_async": statistics.mean(whole),
                    "whole_over_async_range": [min(whole), max(whole)],
                    "small_over_async": statistics.mean(small),
                    "small_over_async_range": [min(small), max(small)],
                }
            )
    training = [r for r in rows if r["mix"] == cfg.mixes[0].describe()]
    gain = [r["whole_over_async"] for r in training]
    return {
        "smoke": smoke,
        "config": {
            **asdict(cfg),
            "mixes": [m.describe() for m in cfg.mixes],
            "prompt_sizes": asdict(sizes),
        },
        "rows": rows,
        "targets": [
            {
                "metric": "original-shaped lockstep (whole batch in flight) / async, "
                f"one rollout batch, {cfg.mixes[0].describe()}",
                "measured": ", ".join(
                    f"{r['whole_over_async']:.2f}x at {r['slots']} slots"
                    for r in training
                ),
                "target": "reported",
                "ratio": max(gain),
                "pass": None,
            }
        ],
    }

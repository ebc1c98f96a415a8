"""Benchmark 4's configuration and loop names, shared by the loops, the runner and
the report (``bench/loop.py`` runs them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.engines import CostModel, OutputModel
from bench.train_cost import TrainCost
from bench.workload import LONG, TRAINING, Mix

ORIGINAL = "original"


@dataclass(frozen=True)
class Config:
    # config.yaml's shape, scaled down: there 128 questions x 16 per step and 64
    # groups in flight (1,024 episodes, about one per slot of 4 servers); here
    # too, a step's batch is twice the slots in episodes and half of its
    # questions are in flight at a time.
    batch: int = 4  # questions per step (train_dataset.batch_size)
    group_size: int = 4
    slots: int = 8
    concurrency: int = 2  # rollout.max_concurrent_rollouts (groups)
    steps: int = 6
    warmup: int = 1
    ratios: tuple[float, ...] = (0.25, 1.0, 4.0)
    offpolicyness: tuple[int, ...] = (0, 1, 2, 4)
    mixes: tuple[Mix, ...] = (TRAINING, LONG)
    chunk_tokens: int = 256
    memory_budget: int = 1024
    final_budget: int = 512
    # Twice benchmark 2's service times (~50 ms memory turns): long enough for
    # the driver's CPU to stay a small share of a turn, short enough for minutes
    # of run time (AReaL's 50 ms runner poll is still a turn: see NOTES.md).
    cost: CostModel = field(default_factory=lambda: CostModel().scaled(2.0))
    outputs: OutputModel = field(default_factory=OutputModel)
    train: TrainCost = field(default_factory=TrainCost)
    seed: int = 0


def label(loop: str) -> str:
    if loop == ORIGINAL:
        return "original (lockstep whole batch, then train)"
    if loop == "0":
        return "AReaL synchronous (offpolicyness 0)"
    return f"AReaL offpolicyness {loop}"

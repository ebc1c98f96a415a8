"""The loop benchmark's workload, known in advance from a dry run.

Output lengths are drawn per episode from its first prompt (see
:class:`~bench.engines.SimEngine`), so running every question once through an
engine that does not sleep gives the exact work each loop will meet: the
service time of every turn, and the rows and tokens each question trains on.
From that come the train-cost calibration and the zero-driver-cost
predictions of the synchronous loops and of the ideal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.engines import SimEngine
from bench.loop_config import Config
from bench.schedule import Work, async_schedule_s, lockstep_schedule_s
from bench.train_cost import Calibration, batch_size, calibrate, train_seconds
from bench.workload import Mix, make_items


@dataclass
class Plan:
    """Questions in feed order, with each one's work and training size."""

    mix: Mix
    items: list[dict[str, Any]]
    services: Work  # question -> episode -> service per turn
    rows: list[int]
    tokens: list[int]
    calib: Calibration

    def batch(self, b: int, size: int) -> slice:
        return slice(b * size, (b + 1) * size)


def make_engine(cfg: Config, tokenizer, sleep: bool = True) -> SimEngine:
    return SimEngine(
        tokenizer,
        cfg.slots,
        cfg.memory_budget,
        cfg.cost,
        cfg.outputs,
        cfg.seed,
        sleep=sleep,
    )


def plan(cfg: Config, mix: Mix, workflow, tokenizer) -> Plan:
    """Questions for every loop, and their work from a dry run of the engine."""
    from bench.common import run_async
    from bench.vocab import tokens_per_char

    # By the last step StalenessManager may have admitted (offpolicyness + steps)
    # batches, and prepare_batch queues up to (offpolicyness + 1) more: no
    # question is read twice.
    n = (cfg.steps + 2 * max(cfg.offpolicyness) + 1) * cfg.batch
    counts = mix.counts(n, cfg.seed)
    items = make_items(counts, cfg.chunk_tokens, tokens_per_char(tokenizer))
    engine = make_engine(cfg, tokenizer, sleep=False)
    services, rows, tokens = [], [], []
    for it in items:
        known = set(engine.services)
        traj = run_async(workflow.arun_episode(engine, it))
        services.append([s for r, s in engine.services.items() if r not in known])
        r, t = batch_size([traj])
        rows.append(r)
        tokens.append(t)
    sync_s, batch_rows, batch_tokens = [], [], []
    for b in range(cfg.steps):
        s = slice(b * cfg.batch, (b + 1) * cfg.batch)
        sync_s.append(async_schedule_s(services[s], cfg.slots, cfg.concurrency))
        batch_rows.append(sum(rows[s]))
        batch_tokens.append(sum(tokens[s]))
    return Plan(
        mix, items, services, rows, tokens, calibrate(sync_s, batch_rows, batch_tokens)
    )


def predicted(cfg: Config, p: Plan, ratio: float) -> dict[str, float]:
    """Steady-state episodes/s of the synchronous loops at zero driver cost,
    and of the ideal (every step max(engine-bound rollout, train step))."""
    sync = original = ideal = 0.0
    for b in range(cfg.warmup, cfg.steps):
        s = p.batch(b, cfg.batch)
        work = p.services[s]
        train = train_seconds(
            cfg.train, p.calib, ratio, sum(p.rows[s]), sum(p.tokens[s])
        )
        engine_s = sum(x for q in work for ep in q for x in ep) / cfg.slots
        sync += async_schedule_s(work, cfg.slots, cfg.concurrency) + train
        original += lockstep_schedule_s(work, cfg.slots, cfg.batch) + train
        ideal += max(engine_s, train)
    episodes = (cfg.steps - cfg.warmup) * cfg.batch * cfg.group_size
    return {
        "ideal": episodes / ideal,
        "sync_zero_cost": episodes / sync,
        "original_zero_cost": episodes / original,
    }

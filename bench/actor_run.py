"""The CPU run with the actor's passes also timed in CPU seconds.

    uv run python -m bench.actor_run --config config_cpu.yaml scheduler.type=null …

(``python -m standin.train`` with `CpuTimedTrainer` as its trainer.)

AReaL's ``timeperf/*`` stats are wall seconds, which other work on a shared
machine inflates. In a one-process (SPMD) CPU run the actor computes on the
calling thread (one intra-op thread, CPU autograd runs backward on the caller),
so that thread's CPU time is what the pass itself cost. Each pass adds
``timeperf/cpu_{pass}`` beside AReaL's wall ``timeperf/{pass}``; the step line
carries both in ``timing_s``. Used by benchmark 7 (``bench/actor.py``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from areal.utils import stats_tracker

from standin import train
from standin.actor import StandinPPOActor
from standin.trainer import StandinPPOTrainer


@contextmanager
def cpu_seconds(name: str) -> Iterator[None]:
    """Record this thread's CPU seconds in the block as ``timeperf/cpu_{name}``."""
    start = time.thread_time()
    try:
        yield
    finally:
        stats_tracker.scalar(**{f"timeperf/cpu_{name}": time.thread_time() - start})


class CpuTimedActor(StandinPPOActor):
    """The CPU run's actor, its proximal and training passes timed in CPU seconds."""

    def compute_logp(self, *args: Any, **kwargs: Any) -> Any:
        with cpu_seconds("recompute_logp"):
            return super().compute_logp(*args, **kwargs)

    def ppo_update(self, *args: Any, **kwargs: Any) -> None:
        with cpu_seconds("train_step"):
            super().ppo_update(*args, **kwargs)


class CpuTimedTrainer(StandinPPOTrainer):
    """The CPU run's trainer with `CpuTimedActor`."""

    actor_cls: type = CpuTimedActor


if __name__ == "__main__":
    # by its module's name, so that a worker process can import it
    from bench.actor_run import CpuTimedTrainer as Timed

    train.main(sys.argv[1:], trainer_cls=Timed)

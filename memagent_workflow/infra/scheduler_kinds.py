"""The scheduler of each ``scheduler.type``: one map, for training and eval.

- ``local``: `MemAgentLocalScheduler` (ports unique per run, a bounded worker start);
- ``ray``: `MemAgentRayScheduler` (each worker's node logged, a lost node stops the run);
- ``slurm``: `MemAgentSlurmScheduler` (AReaL's, its container the ``slurm:`` section's).

A caller may replace a kind and pass the scheduler's own keyword arguments (``startup_timeout``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from areal.api import Scheduler

from memagent_workflow.infra.ray_scheduler import MemAgentRayScheduler
from memagent_workflow.infra.scheduler import MemAgentLocalScheduler
from memagent_workflow.infra.slurm_scheduler import MemAgentSlurmScheduler

SCHEDULERS: Mapping[str, type[Scheduler]] = {
    "local": MemAgentLocalScheduler,
    "ray": MemAgentRayScheduler,
    "slurm": MemAgentSlurmScheduler,
}


def make_scheduler(
    config: Any, kinds: Mapping[str, type[Scheduler]] | None = None, **kwargs: Any
) -> Scheduler:
    """The scheduler ``config.scheduler.type`` names, built with ``exp_config``
    and ``kwargs``; ``kinds`` replaces entries of `SCHEDULERS`."""
    classes = {**SCHEDULERS, **(kinds or {})}
    kind = config.scheduler.type
    if kind not in classes:
        raise ValueError(
            f"unknown scheduler.type {kind!r}: one of {', '.join(sorted(classes))}"
        )
    return classes[kind](exp_config=config, **kwargs)

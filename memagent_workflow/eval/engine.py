"""The inference engine of an eval run: SGLang or vLLM launched by AReaL, or
running servers.

The engine follows ``rollout.backend`` (``sglang:dN`` or ``vllm:dN``; under
AReaL's SPMD launcher, ``allocation_mode``'s servers: ``infra.engines``):
AReaL's `RemoteSGLangEngine` or `RemotevLLMEngine`, with the server arguments
of the ``sglang:`` or ``vllm:`` section. What surrounds the engine (the model
and data a cluster holds, the servers already running, the engine class) is a
``ClusterInference``: ``examples/eval.py`` builds this one; another entry may
pass its own subclass.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from areal.utils import logging

from memagent_workflow.eval.checks import EvalRefused
from memagent_workflow.eval.config import MemAgentEvalConfig
from memagent_workflow.infra import engines
from memagent_workflow.infra.ray_cluster import ray_for

logger = logging.getLogger("MemAgentEval")
#: The role of the rollout workers AReaL's scheduler launches for an eval.
ROLLOUT_ROLE = "eval-rollout"


class ClusterInference:
    """A GPU cluster: the model and data are on disk, SGLang or vLLM serves it."""

    def __init__(self, config: MemAgentEvalConfig):
        self.config = config

    @property
    def backend(self) -> str:
        """``sglang`` or ``vllm`` (``EvalRefused`` if the config disagrees)."""
        try:
            return engines.rollout_backend(self.config)
        except ValueError as exc:
            raise EvalRefused(str(exc)) from exc

    def prepare(self) -> None:
        """Before the inputs are checked: nothing to build on a cluster."""

    def single_controller(self) -> contextlib.AbstractContextManager[None]:
        """Around a run whose scheduler launches the servers."""
        return contextlib.nullcontext()

    def servers(self) -> contextlib.AbstractContextManager[list[str]]:
        """``host:port`` of running servers (``AREAL_LLM_SERVER_ADDRS``; none:
        those registered under ``rollout.experiment_name/trial_name``)."""
        env = os.environ.get("AREAL_LLM_SERVER_ADDRS", "")
        return contextlib.nullcontext([a for a in env.split(",") if a])

    def scheduler_kwargs(self) -> dict[str, Any]:
        """Extra keyword arguments of AReaL's scheduler."""
        return {}

    def engine_class(self) -> type:
        """The rollout engine class (its controller launches the servers)."""
        return engines.engine_class(self.backend)

    def server_args(self, tp_size: int) -> dict[str, Any]:
        """Arguments of a server the scheduler launches."""
        return engines.server_args(self.config, self.backend, tp_size)


@contextlib.contextmanager
def open_engine(
    config: MemAgentEvalConfig, inference: ClusterInference
) -> Iterator[Any]:
    """SGLang or vLLM launched by AReaL (``scheduler.type`` set), or running
    servers."""
    ev, rollout = config.eval, config.rollout
    rollout.max_head_offpolicyness = int(1e12)  # weights never change here
    rollout.max_concurrent_rollouts = ev.concurrency
    rollout.consumer_batch_size = ev.concurrency
    rollout.check_trajectory_format = False  # the workflow returns plain records
    with contextlib.ExitStack() as stack:
        if config.scheduler.type is not None:
            stack.enter_context(inference.single_controller())
            stack.enter_context(ray_for(config.scheduler.type))
            engine = launch_servers(config, inference)
        else:
            addrs = stack.enter_context(inference.servers())
            engine = inference.engine_class()(rollout)
            try:  # without addresses: servers registered under rollout.experiment/trial
                engine.initialize(addr=addrs or None, train_data_parallel_size=1)
            except RuntimeError as exc:
                raise EvalRefused(
                    f"{exc} Set scheduler.type=local (AReaL launches the servers), "
                    "AREAL_LLM_SERVER_ADDRS=host:port[,...] for running servers "
                    "(without a GPU: docs/eval.md)."
                ) from exc
        yield stack.enter_context(destroyed(engine))


@contextlib.contextmanager
def destroyed(engine: Any) -> Iterator[Any]:
    """``engine``, destroyed on exit. Where ``destroy`` fails (a launched worker
    already dead fails its ``destroy`` call, and AReaL's controller then skips
    deleting the workers), the scheduler's workers are deleted anyway, and the
    failure is raised only if the run itself raised nothing (else logged, so
    that the run's own error is the one that shows)."""
    failed = False
    try:
        yield engine
    except BaseException:
        failed = True
        raise
    finally:
        try:
            engine.destroy()
        except Exception as exc:
            scheduler = getattr(engine, "scheduler", None)
            if scheduler is not None:
                scheduler.delete_workers(None)
            if not failed:
                raise
            logger.warning(f"the engine's teardown failed ({type(exc).__name__})")


def launch_servers(config: MemAgentEvalConfig, inference: ClusterInference) -> Any:
    """Single controller: AReaL's scheduler starts SGLang or vLLM serving
    ``actor.path``."""
    from areal.api.alloc_mode import ModelAllocation
    from areal.infra import LocalScheduler

    from memagent_workflow.infra.ray_scheduler import MemAgentRayScheduler
    from memagent_workflow.infra.slurm_scheduler import MemAgentSlurmScheduler

    # Ray: each server's node in the logs, and a lost node stops the eval.
    kinds = {
        "local": LocalScheduler,
        "ray": MemAgentRayScheduler,
        "slurm": MemAgentSlurmScheduler,
    }
    if config.scheduler.type not in kinds:
        raise EvalRefused(f"unknown scheduler.type {config.scheduler.type!r}")
    alloc = ModelAllocation.from_str(config.rollout.backend, name="rollout")
    if alloc.backend not in engines.BACKENDS:
        raise EvalRefused(
            f"rollout.backend must be sglang:dN or vllm:dN, got {config.rollout.backend}"
        )
    scheduler = kinds[config.scheduler.type](
        exp_config=config, **inference.scheduler_kwargs()
    )
    engine = inference.engine_class().as_controller(config.rollout, scheduler)
    engine.initialize(
        role=ROLLOUT_ROLE, server_args=inference.server_args(alloc.parallel.tp_size)
    )
    return engine

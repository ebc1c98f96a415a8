"""What the trainer says when a run cannot start or stops: the workers a failed
start leaves are stopped, and a stopped run names the lost nodes, the servers
that are down and the recover checkpoint a rerun resumes from."""

from __future__ import annotations

from typing import Any

from areal.utils import logging

from memagent_workflow.infra.ray_scheduler import MemAgentRayScheduler
from memagent_workflow.recovery.batches import server_addresses
from memagent_workflow.recovery.ledger import RolloutStalled
from memagent_workflow.recovery.servers import servers_down_message

logger = logging.getLogger("MemAgentTrainer")


class SaysWhyItStopped:
    """Mixin of `MemAgentPPOTrainer`: its messages for a failed start and a
    stopped run (``config``, ``scheduler``, ``rollout``, ``recover_handler`` and
    ``recover_info`` are the trainer's)."""

    config: Any
    recover_handler: Any
    recover_info: Any

    def _stop_workers_of_failed_start(self, exc: BaseException) -> None:
        """A start-up that fails after the scheduler started workers (e.g. the
        restored weights cannot reach a server) would leave them running: no
        ``with`` block has been entered to close the trainer."""
        logger.error(
            f"Training could not start ({type(exc).__name__}); once the cause "
            "is fixed, rerun the same command (it resumes from the last recover "
            "checkpoint, if any)."
        )
        scheduler = getattr(self, "scheduler", None)
        if scheduler is not None:
            try:
                scheduler.delete_workers()
            except Exception as cleanup:  # the original error matters more
                logger.warning(f"could not stop the workers: {cleanup!r}")

    def _nodes_lost(self) -> str:
        scheduler = getattr(self, "scheduler", None)
        if not isinstance(scheduler, MemAgentRayScheduler):
            return ""
        lost = scheduler.lost()
        return f"{lost}. " if lost else ""

    def _servers_down(self, exc: BaseException) -> str:
        # A RolloutStalled already names the servers.
        if isinstance(exc, (RolloutStalled, KeyboardInterrupt)):
            return ""
        return servers_down_message(server_addresses(getattr(self, "rollout", None)))

    def _resume_advice(self) -> str:
        if self.config.recover.mode in ("disabled", "off"):
            return "recover.mode is off: a rerun starts over."
        step = self.recover_handler.last_step_info.global_step
        if step < 0 and self.recover_info is not None:
            step = self.recover_info.last_step_info.global_step
        if step < 0:
            return "No recover checkpoint yet: a rerun starts over."
        return (
            f"Last recover checkpoint: global step {step}. Once the cause is fixed "
            "(e.g. the inference servers answer again), rerun the same command to "
            "resume from it; steps after it are redone."
        )

"""AReaL's PPO trainer, made to survive crashes and inference-server outages.

`MemAgentPPOTrainer` is `PPOTrainer` with four changes, all for recovery:

* the train data loader is a `QuestionLedger`: a resumed run trains every
  question of the epoch exactly once, and a step whose groups keep being
  rejected (servers gone) stops with `RolloutStalled` instead of churning;
* the actor is `MemAgentPPOActor` (the LR schedule survives a resume);
* recover checkpoints are replaced only once complete (`AtomicRecoverHandler`);
* servers left paused by a trainer that died in a weight update are resumed.

Everything else (scheduler, controllers, executor, staleness, weight updates,
the training loop) is AReaL's.
"""

from __future__ import annotations

import os
from typing import Any

from areal import PPOTrainer
from areal.api.alloc_mode import ModelAllocation
from areal.api.cli_args import PPOActorConfig, PPOConfig, TrainDatasetConfig
from areal.utils import logging
from areal.utils.environ import is_single_controller
from areal.utils.stats_logger import StatsLogger

from memagent_workflow.actor import MemAgentPPOActor
from memagent_workflow.recovery.checkpoint import (
    AtomicRecoverHandler,
    restore_interrupted_dump,
)
from memagent_workflow.recovery.ledger import (
    INDEX_KEY,
    IndexedRows,
    QuestionLedger,
    RolloutStalled,
)

logger = logging.getLogger("MemAgentTrainer")

QUESTIONS_LOG = "questions.jsonl"


def question_indices(batch: list[dict[str, Any]]) -> list[int]:
    """The ``question_index`` of each trajectory (one group = one question)."""
    out = []
    for traj in batch:
        value = traj.get(INDEX_KEY)
        if value is None:
            raise KeyError(
                f"a trajectory has no '{INDEX_KEY}' (keys {sorted(traj)}): the "
                "workflow must copy data['question_index'] into its rows"
            )
        if hasattr(value, "to_local"):  # single controller: a remote tensor
            value = value.to_local()
        out.append(int(value.reshape(-1)[0]) if hasattr(value, "reshape") else value)
    return out


class MemAgentPPOTrainer(PPOTrainer):
    """`PPOTrainer` with resumable data, complete checkpoints and bounded waits."""

    actor_cls: type = MemAgentPPOActor

    def __init__(self, config: PPOConfig, train_dataset: Any = None, **kwargs: Any):
        self.restored = restore_interrupted_dump(config.recover)
        super().__init__(config, train_dataset=train_dataset, **kwargs)
        self.recover_handler = AtomicRecoverHandler.take_over(self.recover_handler)
        self._say_where_training_starts()
        if self.recover_info is None and hasattr(self.rollout, "continue_generation"):
            # A trainer killed between pause and continue leaves its servers
            # paused; a resumed run un-pauses them when it pushes its weights.
            self.rollout.continue_generation()
        self._track_trained_questions()

    # ------------------------------------------------------------ AReaL hooks
    def _create_dataloader(self, dataset, dataset_config, rank, world_size):
        if not isinstance(dataset_config, TrainDatasetConfig):
            return super()._create_dataloader(
                dataset, dataset_config, rank=rank, world_size=world_size
            )
        loader = super()._create_dataloader(
            IndexedRows(dataset), dataset_config, rank=rank, world_size=world_size
        )
        log_path = None
        if int(os.environ.get("RANK", "0")) == 0:
            log_dir = StatsLogger.get_log_path(self.config.stats_logger)
            log_path = os.path.join(log_dir, QUESTIONS_LOG)
        return QuestionLedger(
            loader,
            prefetch_batches=self.config.rollout.max_head_offpolicyness,
            log_path=log_path,
        )

    def _create_train_engine(
        self, actor_config: PPOActorConfig, alloc: ModelAllocation
    ) -> Any:
        if actor_config is not self.config.actor or alloc.backend != "fsdp":
            return super()._create_train_engine(actor_config, alloc)
        if is_single_controller():
            actor = self.actor_cls.as_controller(actor_config, self.scheduler)
        else:
            actor = self.actor_cls(config=actor_config)
        actor.create_process_group(parallel_strategy=alloc.parallel)
        return actor

    # ------------------------------------------------------------ recovery
    def _say_where_training_starts(self) -> None:
        if self.restored:
            logger.warning(self.restored)
        if self.recover_info is None:
            return
        last = self.recover_info.last_step_info
        total = self.config.total_train_steps
        logger.info(
            f"resumed from the recover checkpoint of global step {last.global_step} "
            f"(epoch {last.epoch + 1}, step {last.epoch_step + 1}): training goes on "
            f"at global step {last.global_step + 1}; any steps the crashed run made "
            "after that checkpoint are redone"
        )
        if total is not None and last.global_step + 1 >= total:
            logger.warning(
                f"this trial already reached total_train_steps={total}: nothing "
                "left to train (start a new trial_name to train again)"
            )

    def train(self, *args: Any, **kwargs: Any) -> None:
        """AReaL's training loop; if it dies, say what a rerun will resume from."""
        try:
            super().train(*args, **kwargs)
        except BaseException:
            logger.error(f"Training stopped. {self._resume_advice()}")
            raise

    def _track_trained_questions(self) -> None:
        """Tell the ledger which questions each step's batch holds."""
        inner = self.actor.prepare_batch

        def prepare_batch(dataloader: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                batch = inner(dataloader, *args, **kwargs)
            except RolloutStalled as exc:
                servers = getattr(self.rollout, "addresses", None) or []
                raise RolloutStalled(f"{exc} Servers: {', '.join(servers)}.") from None
            if isinstance(dataloader, QuestionLedger):
                dataloader.mark_trained(question_indices(batch))
            return batch

        self.actor.prepare_batch = prepare_batch

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

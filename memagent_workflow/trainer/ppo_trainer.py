"""AReaL's PPO trainer: a step report, and survival of crashes and server outages.

`MemAgentPPOTrainer` is `PPOTrainer` whose stats logger is a `StepReport`
(one line per step, ``steps.jsonl`` and ``learning_curve.png``), whose actor
counts tied groups and, given ``memagent.skip_tied_groups``, keeps them out of
its passes (`memagent_workflow.trainer.tied_groups`), and with six changes for
recovery:

* the train data loader is a `QuestionLedger`: a resumed run trains every
  question of each pass (epoch) exactly once, and a step whose groups keep
  being rejected (servers gone) stops with `RolloutStalled` instead of churning;
* the actor is `MemAgentPPOActor` (the LR schedule survives a resume; its
  ``prepare_batch`` tells the ledger which questions each step trains);
* recover checkpoints are replaced only once complete (`AtomicRecoverHandler`);
* servers left paused by a trainer that died in a weight update are resumed;
* a start-up that fails after the scheduler started workers stops them, and a
  stopped run says what a rerun resumes from (`trainer/stop_messages.py`);
* when training ends or stops, ``latest`` names the newest HF checkpoint
  (`memagent_workflow.trainer.latest`);
* each HF checkpoint records its prompt order (``trainer/prompt_order_record.py``).

With ``actor.kl_loss_coef > 0`` (the original's KL loss, `memagent_workflow.trainer.kl_loss`)
it builds AReaL's reference model (``ref:``), an ``actor_cls`` engine, even when
``actor.kl_ctl`` is 0; AReaL's loop then computes ``ref_logp`` as for ``kl_ctl``.
The controllers' own ports, which AReaL draws from ``random`` seeded by
``config.seed``, come from an OS-seeded state (`private_random`): two runs with
one seed, started at once, would draw the same ones.

Everything else (scheduler, controllers, executor, staleness, weight updates,
the training loop) is AReaL's. The private methods of `PPOTrainer` overridden
here (``_create_dataloader``, ``_create_train_engine``, ``_init_rollout``,
``_init_scheduler``, ``_save_hf``) are listed, with why, in
``memagent_workflow/areal_internals/pinned.py``, which pins them.
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

from memagent_workflow.infra.ray_scheduler import MemAgentRayScheduler
from memagent_workflow.infra.scheduler import private_random
from memagent_workflow.infra.scheduler_kinds import make_scheduler
from memagent_workflow.recovery.checkpoint import (
    AtomicRecoverHandler,
    restore_interrupted_dump,
)
from memagent_workflow.recovery.ledger import (
    IndexedRows,
    QuestionLedger,
)
from memagent_workflow.trainer.actor import MemAgentPPOActor
from memagent_workflow.trainer.kl_loss import kl_loss_coef
from memagent_workflow.trainer.latest import point_latest
from memagent_workflow.trainer.prompt_order_record import RecordsPromptOrder
from memagent_workflow.trainer.step_report import StepReport
from memagent_workflow.trainer.stop_messages import SaysWhyItStopped
from memagent_workflow.trainer.tree_actor import check_tree_config

logger = logging.getLogger("MemAgentTrainer")

QUESTIONS_LOG = "questions.jsonl"


class MemAgentPPOTrainer(SaysWhyItStopped, RecordsPromptOrder, PPOTrainer):
    """`PPOTrainer` with a step report, resumable data, complete checkpoints and
    bounded waits."""

    actor_cls: type = MemAgentPPOActor
    # Accuracy of a guess, drawn as a line on the learning curve (None: not drawn).
    chance: float | None = None

    def __init__(self, config: PPOConfig, train_dataset: Any = None, **kwargs: Any):
        self.restored = restore_interrupted_dump(config.recover)
        self.built = False
        try:
            self._init_trainer(config, train_dataset, **kwargs)
        except BaseException as exc:
            self._stop_workers_of_failed_start(exc)
            raise
        self.built = True

    def close(self) -> None:
        """AReaL's teardown, once the trainer is built. AReaL 2.0.0 after its
        tag also calls ``close()`` from a failing ``__init__``, where AReaL's
        reads attributes not yet set (``saver``) and its ``AttributeError``
        would replace the cause; ``_stop_workers_of_failed_start`` stops the
        workers then. The Ray scheduler's node watcher stands down here: the
        run is over, its nodes may go."""
        if not self.built:
            return
        try:
            super().close()
        finally:  # AReaL 1.0.4's close never deletes all workers at once
            if isinstance(getattr(self, "scheduler", None), MemAgentRayScheduler):
                self.scheduler.stand_down()

    def _init_trainer(
        self, config: PPOConfig, train_dataset: Any, **kwargs: Any
    ) -> None:
        check_kl_loss_config(config)  # before any worker starts
        for name in ("actor", "ref"):  # tree training's needs (None: no ref)
            check_tree_config(getattr(config, name), name)
        super().__init__(config, train_dataset=train_dataset, **kwargs)
        self._add_kl_loss_ref()
        self.stats_logger = StepReport(
            self.stats_logger,
            title=f"{config.experiment_name}/{config.trial_name}",
            chance=self.chance,
        )
        # AReaL builds its handler and loads with it inside __init__: this one is
        # built as AReaL's was, with the timer the load restored.
        self.recover_handler = AtomicRecoverHandler.resuming(
            config.recover, self.recover_handler.ft_spec, self.recover_info
        )
        self._say_where_training_starts()
        if self.recover_info is None and not is_single_controller():
            # A trainer killed between pause and continue leaves its servers
            # paused; a resumed run un-pauses them when it pushes its weights.
            # (The single controller's servers are this run's own.)
            self.rollout.continue_generation()

    def _add_kl_loss_ref(self) -> None:
        """The reference model of the KL loss, if AReaL built none (``kl_ctl``
        0), built and initialised as ``PPOTrainer.__init__`` builds its own."""
        if self.ref is not None or kl_loss_coef(self.config.actor) <= 0:
            return
        alloc = ModelAllocation.from_str(self.config.ref.backend, name="ref")
        self.ref = self._create_train_engine(self.config.ref, alloc)
        self.ref.initialize(addr=None, ft_spec=self.recover_handler.ft_spec, role="ref")
        if self.config.perf_tracer is not None and is_single_controller():
            self.ref.config_perf_tracer(self.config.perf_tracer, role="ref")
        if self._should_offload_ref:
            self._offload_model(self.ref, role="ref")
        logger.info(
            f"reference model built for the KL loss (actor.kl_loss_coef="
            f"{self.config.actor.kl_loss_coef}, actor.kl_ctl={self.config.actor.kl_ctl})"
        )

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
        # The actor and its reference model (``ref:``) alike: one engine class,
        # so the reference computes log-probs exactly as the actor does.
        if alloc.backend != "fsdp":
            with private_random():  # the train controller's gloo port
                return super()._create_train_engine(actor_config, alloc)
        return self._fsdp_engine_of(actor_config, alloc)

    def _fsdp_engine_of(
        self, actor_config: PPOActorConfig, alloc: ModelAllocation
    ) -> Any:
        """An ``actor_cls`` engine (its controller under the single controller)
        in its process group, as AReaL builds its FSDP actor (or reference)."""
        skip = self.config.memagent.skip_tied_groups
        if is_single_controller():
            actor = self.actor_cls.as_controller(
                actor_config, self.scheduler, skip_tied_groups=skip
            )
        else:
            actor = self.actor_cls.in_process(actor_config, skip_tied_groups=skip)
        with private_random():  # the train controller's gloo port
            actor.create_process_group(parallel_strategy=alloc.parallel)
        return actor

    def _init_rollout(self, *args: Any, **kwargs: Any) -> Any:
        # The rollout controller draws its callback server's port from the
        # seeded `random`: the same port in two runs with one seed.
        with private_random():
            return self._rollout_engine_of(*args, **kwargs)

    def _rollout_engine_of(self, *args: Any, **kwargs: Any) -> Any:
        """AReaL's rollout engine, or its controller under the single controller."""
        return super()._init_rollout(*args, **kwargs)

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
        """AReaL's training loop; if it dies, say what a rerun will resume from;
        if it ends, which questions it handed out and did not train."""
        try:
            super().train(*args, **kwargs)
        except BaseException as exc:
            self._point_latest()
            logger.error(
                f"Training stopped. {self._nodes_lost()}{self._servers_down(exc)}"
                f"{self._resume_advice()}"
            )
            raise
        self._point_latest()
        if isinstance(self.train_dataloader, QuestionLedger):
            self.train_dataloader.log_untrained()
        if isinstance(self.stats_logger, StepReport) and StepReport.on_rank0():
            logger.info(self.stats_logger.summary())

    def _point_latest(self) -> None:
        """Rank 0 points ``latest`` at the newest HF checkpoint, and says where."""
        if int(os.environ.get("RANK", "0")) != 0:
            return
        s = self.config.saver
        try:
            link = point_latest(s.experiment_name, s.trial_name, s.fileroot)
        except OSError as exc:  # never in the way of the run's own outcome
            logger.warning(f"could not point the `latest` checkpoint link: {exc}")
            return
        if link is not None:
            logger.info(f"newest HF checkpoint: {link} -> {link.resolve().name}")

    def _init_scheduler(self) -> Any:
        # Ports unique per run and a bounded worker start (two runs side by side).
        # Under Ray: each worker's node in the logs, and a lost node stops the run.
        return make_scheduler(self.config)


def check_kl_loss_config(config: PPOConfig) -> None:
    """A KL loss needs a reference model: refuse ``kl_loss_coef > 0`` without
    ``ref:`` before any worker starts."""
    coef = kl_loss_coef(config.actor)
    if coef > 0 and config.ref is None:
        raise ValueError(
            f"actor.kl_loss_coef={coef} needs a reference model, but ref is null: "
            "add a ref: section (path: the initial model, as config.yaml's) or set "
            "actor.kl_loss_coef=0"
        )
    if coef > 0 and config.actor.kl_ctl > 0:
        logger.warning(
            f"KL counted twice: actor.kl_ctl={config.actor.kl_ctl} puts a KL penalty "
            f"in the reward and actor.kl_loss_coef={coef} a KL term in the loss "
            "(the original MemAgent has only the loss: kl_ctl 0)"
        )

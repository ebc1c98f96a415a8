"""AReaL's PPO trainer: a step report, and survival of crashes and server outages.

`MemAgentPPOTrainer` is `PPOTrainer` with a one-line-per-step report (log line
and ``steps.jsonl``, in the stats logger's folder
``{fileroot}/logs/{user}/{experiment}/{trial}``, with ``learning_curve.png``
beside it, redrawn after each validation) and five changes for recovery:

* the train data loader is a `QuestionLedger`: a resumed run trains every
  question of each pass (epoch) exactly once, and a step whose groups keep
  being rejected (servers gone) stops with `RolloutStalled` instead of churning;
* the actor is `MemAgentPPOActor` (the LR schedule survives a resume);
* recover checkpoints are replaced only once complete (`AtomicRecoverHandler`);
* servers left paused by a trainer that died in a weight update are resumed;
* a start-up that fails after the scheduler started workers stops them.

Everything else (scheduler, controllers, executor, staleness, weight updates,
the training loop) is AReaL's.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import torch.distributed as dist
from areal import PPOTrainer
from areal.api.alloc_mode import ModelAllocation
from areal.api.cli_args import PPOActorConfig, PPOConfig, TrainDatasetConfig
from areal.infra.platforms import current_platform
from areal.utils import logging
from areal.utils.environ import is_single_controller
from areal.utils.stats_logger import StatsLogger

from memagent_workflow.actor import MemAgentPPOActor
from memagent_workflow.curve import plot_curves, read_steps
from memagent_workflow.prox_approx import approx_errors
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
from memagent_workflow.recovery.ledger_sync import mark_step
from memagent_workflow.scheduler import MemAgentLocalScheduler
from memagent_workflow.tied_groups import drop_tied_groups, step_counts

logger = logging.getLogger("MemAgentTrainer")

QUESTIONS_LOG = "questions.jsonl"

STALENESS = "ppo_actor/update/version_stats/sample_staleness_theta"


def _total(stats: dict[str, Any], key: str) -> int:
    """A per-group mean times its count: the step's total."""
    return round(stats.get(key, 0.0) * stats.get(f"{key}__count", 0))


def step_line(stats: dict[str, Any], global_step: int, elapsed_s: float) -> dict:
    """The step's headline numbers, from AReaL's exported stats."""
    return {
        "step": global_step + 1,
        "reward": stats.get("rollout/memagent/reward"),
        "rows": int(stats.get("ppo_actor/n_seqs", 0)),
        "staleness_avg": stats.get(f"{STALENESS}_avg"),
        "staleness_max": stats.get(f"{STALENESS}_max"),
        "oldest_rollout_version": stats.get("rollout/memagent/oldest_version"),
        "memory_tokens": stats.get("rollout/memagent/memory_tokens"),
        "grad_norm": stats.get("ppo_actor/update/grad_norm"),
        "actor_loss": stats.get("ppo_actor/update/actor_loss/avg"),
        "lr": stats.get("ppo_actor/update/lr"),
        "groups_rejected": int(stats.get("rollout/rejected__count", 0)),
        **step_counts(stats),  # groups, tied_groups, rows_tied, rows/tokens_skipped
        "episodes_failed": _total(stats, "rollout/memagent/episodes_failed"),
        "calls_retried": _total(stats, "rollout/memagent/calls_retried"),
        "eval_reward": stats.get("eval-rollout/memagent/reward"),
        "eval_sub_em": stats.get("eval-rollout/memagent/sub_em"),
        "prox_approx_error": approx_errors(stats),  # prox_logp_method: metrics
        "timing_s": {
            k.removeprefix("timeperf/"): round(v, 2)
            for k, v in stats.items()
            if k.startswith("timeperf/") and not k.endswith("__count")
        },
        "elapsed_s": round(elapsed_s, 1),
    }


def _fmt(value: float | None) -> str:
    # None: this step's export held no finished episode (AReaL exports rollout
    # stats when episodes finish, and read-ahead can finish a batch a step early).
    return "n/a" if value is None else f"{value:.3f}"


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


def server_addresses(rollout: Any) -> list[str]:
    """The inference servers a rollout engine (one process) or controller uses."""
    engine = getattr(rollout, "_engine", rollout)  # RemoteSGLangEngine's inner one
    addresses = getattr(engine, "addresses", None)
    if addresses:
        return [str(a) for a in addresses]
    infos = getattr(rollout, "server_infos", None) or []
    return [f"{i.host}:{i.port}" for i in infos]


class MemAgentPPOTrainer(PPOTrainer):
    """`PPOTrainer` with a step report, resumable data, complete checkpoints and
    bounded waits."""

    actor_cls: type = MemAgentPPOActor
    # Accuracy of a guess, drawn as a line on the learning curve (None: not drawn).
    chance: float | None = None

    def __init__(self, config: PPOConfig, train_dataset: Any = None, **kwargs: Any):
        self.restored = restore_interrupted_dump(config.recover)
        try:
            self._init_trainer(config, train_dataset, **kwargs)
        except BaseException as exc:
            self._stop_workers_of_failed_start(exc)
            raise

    def _init_trainer(
        self, config: PPOConfig, train_dataset: Any, **kwargs: Any
    ) -> None:
        super().__init__(config, train_dataset=train_dataset, **kwargs)
        self._start = time.perf_counter()
        log_dir = StatsLogger.get_log_path(self.config.stats_logger)
        self.steps_path = os.path.join(log_dir, "steps.jsonl")
        self.curve_path = os.path.join(log_dir, "learning_curve.png")
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
        return self._fsdp_engine_of(actor_config, alloc)

    def _fsdp_engine_of(
        self, actor_config: PPOActorConfig, alloc: ModelAllocation
    ) -> Any:
        """An ``actor_cls`` engine (its controller under the single controller)
        in its process group, as AReaL builds its FSDP actor."""
        if is_single_controller():
            actor = self.actor_cls.as_controller(actor_config, self.scheduler)
        else:
            actor = self.actor_cls(config=actor_config)
        actor.create_process_group(parallel_strategy=alloc.parallel)
        return actor

    def _export_and_commit_stats(self, epoch: int, epoch_step: int, global_step: int):
        # Mirrors PPOTrainer._export_and_commit_stats (pinned by
        # tests/unit/test_areal_pins.py) and keeps the stats for the report.
        stats = self.actor.export_stats()
        stats.update(self.rollout.export_stats())
        if self.eval_rollout is not None:
            stats.update(self.eval_rollout.export_stats())
        self.stats_logger.commit(epoch, epoch_step, global_step, stats)
        if int(os.environ.get("RANK", "0")) == 0:
            self.report(
                step_line(stats, global_step, time.perf_counter() - self._start)
            )
        if not is_single_controller():
            dist.barrier(group=self.actor.cpu_group)
            current_platform.synchronize()

    # ------------------------------------------------------------ report
    def report(self, line: dict) -> None:
        """Log the step's line and append it to ``steps.jsonl``."""
        t = line["timing_s"]
        logger.info(
            f"step {line['step']}: reward {_fmt(line['reward'])} | "
            f"{line['rows']} rows | staleness avg {line['staleness_avg'] or 0:.2f} "
            f"max {line['staleness_max'] or 0:.0f} | {line['groups_rejected']} groups "
            f"rejected, {line['episodes_failed']} episodes failed, "
            f"{line['calls_retried']} calls retried | {line.get('tied_groups')} of "
            f"{line.get('groups')} groups tied, {line.get('rows_skipped')} rows "
            f"skipped | rollout {t.get('rollout', 0)}s "
            f"train {t.get('train_step', 0)}s weights {t.get('update_weights', 0)}s"
            + (
                f" | validation accuracy {line['eval_reward']:.3f}"
                if line["eval_reward"] is not None
                else ""
            )
        )
        with open(self.steps_path, "a") as f:
            f.write(json.dumps(line) + "\n")
        if line["eval_reward"] is not None:
            self.draw_curve()

    def draw_curve(self) -> None:
        """Redraw ``learning_curve.png`` (beside ``steps.jsonl``) from the steps."""
        plot_curves(
            {"validation accuracy": read_steps(self.steps_path)},
            self.curve_path,
            chance=self.chance,
            title=f"{self.config.experiment_name}/{self.config.trial_name}: "
            "GRPO learning curve",
        )

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
        except BaseException:
            logger.error(f"Training stopped. {self._resume_advice()}")
            raise
        if isinstance(self.train_dataloader, QuestionLedger):
            self.train_dataloader.log_untrained()

    def _init_scheduler(self) -> Any:
        # Ports unique per run and a bounded worker start (two runs side by side).
        if self.config.scheduler.type == "local":
            return MemAgentLocalScheduler(exp_config=self.config)
        return super()._init_scheduler()

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

    def _track_trained_questions(self) -> None:
        """Tell the ledger which questions each step's batch holds."""
        inner = self.actor.prepare_batch

        def prepare_batch(dataloader: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                batch = inner(dataloader, *args, **kwargs)
            except RolloutStalled as exc:
                servers = ", ".join(server_addresses(self.rollout)) or "unknown"
                raise RolloutStalled(f"{exc} Servers: {servers}.") from None
            if isinstance(dataloader, QuestionLedger):
                mark_step(dataloader, question_indices(batch), self.actor)
            return self._drop_tied_groups(batch)

        self.actor.prepare_batch = prepare_batch

    def _drop_tied_groups(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The batch for the actor's passes (``memagent.skip_tied_groups``)."""
        memagent = getattr(self.config, "memagent", None)
        skip = bool(getattr(memagent, "skip_tied_groups", False))
        if not is_single_controller():  # this rank's share; keep one group
            return drop_tied_groups(batch, skip)
        dp_size = getattr(getattr(self.actor, "parallel_strategy", None), "dp_size", 1)
        return drop_tied_groups(
            batch, skip, min_groups=dp_size, release=self.actor.clear_batches
        )

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

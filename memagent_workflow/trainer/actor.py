"""AReaL's FSDP PPO actor whose recover checkpoints hold all of its training state.

AReaL 1.0.4 saves the model and the optimizer in a recover checkpoint (DCP) but
not the learning-rate scheduler: a resumed run restarts the schedule at step 0
(the warm-up again, a decay from the top). `MemAgentPPOActor` saves the
scheduler next to them, and a fingerprint of the whole training state (weights,
Adam moments and step count, learning rate, scheduler step); loading checks
that what came back is what was saved, so a damaged checkpoint stops the run
instead of silently training from a mix.

Its ``prepare_batch`` (and its controller's, `MemAgentActorController`, under
AReaL's single controller) also tells the training data's `QuestionLedger` which
questions each step's batch holds (`memagent_workflow.recovery.batches`), then
counts the batch's tied groups and, with ``memagent.skip_tied_groups``, keeps
them out of the passes (`memagent_workflow.trainer.tied_groups`); the trainer
gives that value when it builds them (`in_process`, `as_controller`).

And the port of its xccl weight-update group, which AReaL draws from ``random``
seeded by ``seed``, is drawn from an OS-seeded state: two runs with one seed
would draw the same.

With ``actor.kl_loss_coef > 0`` (`MemAgentActorConfig`) its ``train_batch`` adds
the original MemAgent's KL loss to the loss AReaL's PPO update hands it
(`memagent_workflow.trainer.kl_loss`).

With ``actor.enable_tree_training`` (AReaL's tree training) its passes get a
group's rows in trie order and its mini-batches keep neighbours together; every
step counts the tokens its training pass trained and computed
(`memagent_workflow.trainer.tree_actor`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from areal.api import SaveLoadMeta, Scheduler
from areal.api.cli_args import PPOActorConfig
from areal.engine import FSDPPPOActor
from areal.trainer.ppo.actor import PPOActorController
from areal.utils import logging

from memagent_workflow.infra.scheduler import private_random
from memagent_workflow.recovery.batches import MarksTrainedQuestions
from memagent_workflow.trainer.kl_loss import kl_loss_coef, with_kl_loss
from memagent_workflow.trainer.tied_groups import SkipsTiedGroups
from memagent_workflow.trainer.tree_actor import SharesPrefixes

logger = logging.getLogger("MemAgentActor")

SCHEDULER_FILE = "lr_scheduler.json"
STATE_FILE = "train_state.json"


def _local_sq(t: torch.Tensor) -> float:
    if hasattr(t, "to_local"):  # an FSDP shard (DTensor)
        t = t.to_local()
    return float(t.detach().double().square().sum())


class MemAgentActorController(
    SkipsTiedGroups, MarksTrainedQuestions, PPOActorController
):
    """AReaL's PPO actor controller (single controller) whose batches mark their
    questions trained and, if told to, leave out tied groups."""

    def __init__(
        self,
        train_engine: type,
        config: PPOActorConfig,
        scheduler: Scheduler,
        skip_tied_groups: bool = False,
    ):
        super().__init__(train_engine=train_engine, config=config, scheduler=scheduler)
        self.skip_tied_groups = skip_tied_groups


class MemAgentPPOActor(
    SkipsTiedGroups, MarksTrainedQuestions, SharesPrefixes, FSDPPPOActor
):
    """`FSDPPPOActor` with the LR scheduler and a state check in recover
    checkpoints, whose batches mark their questions trained and, if told to,
    leave out tied groups; tree-aware (`SharesPrefixes`).

    Its constructor stays AReaL's (``cls(config)``: a single controller's workers
    build it so, and never prepare batches); the trainer builds it with
    `in_process` or `as_controller`."""

    @classmethod
    def in_process(
        cls, config: PPOActorConfig, skip_tied_groups: bool = False
    ) -> MemAgentPPOActor:
        """The actor of a one-process (SPMD) run, which prepares its own batches."""
        actor = cls(config=config)
        actor.skip_tied_groups = skip_tied_groups
        return actor

    @classmethod
    def as_controller(
        cls,
        config: PPOActorConfig,
        scheduler: Scheduler,
        skip_tied_groups: bool = False,
    ) -> MemAgentActorController:
        """The single controller's actor: workers of this class, batches prepared here."""
        if config._version != "v1":
            raise ValueError(
                "the question ledger marks trained questions through AReaL's v1 "
                f"actor controller; got actor._version={config._version!r}"
            )
        return MemAgentActorController(
            train_engine=cls,
            config=config,
            scheduler=scheduler,
            skip_tied_groups=skip_tied_groups,
        )

    def train_batch(
        self,
        input_: list[dict[str, Any]] | dict[str, Any],
        loss_fn: Callable[..., torch.Tensor],
        loss_weight_fn: Callable[[dict[str, Any]], torch.Tensor],
    ) -> dict[str, float]:
        """AReaL's training step; with ``kl_loss_coef > 0`` the loss gets the KL
        term (AReaL's PPO update calls this with its GRPO loss)."""
        coef = kl_loss_coef(self.config)
        if coef > 0:
            loss_fn = with_kl_loss(loss_fn, coef, self.config.kl_loss_clamp)
        return super().train_batch(input_, loss_fn, loss_weight_fn)

    def _init_weight_update_from_distributed(self, meta: Any) -> None:
        with private_random():  # the group's master port
            super()._init_weight_update_from_distributed(meta)

    def train_state(self) -> dict[str, Any]:
        """A fingerprint of the training state, the same on every rank."""
        sums = torch.zeros(3, dtype=torch.float64)
        steps = 0.0
        for p in self.model.parameters():
            sums[0] += _local_sq(p)
        for state in self.optimizer.state.values():
            sums[1] += _local_sq(state["exp_avg"]) if "exp_avg" in state else 0.0
            sums[2] += _local_sq(state["exp_avg_sq"]) if "exp_avg_sq" in state else 0.0
            if "step" in state:
                steps = max(steps, float(state["step"]))
        if dist.is_initialized():
            most = torch.tensor([steps], dtype=torch.float64)
            dist.all_reduce(sums, group=self.cpu_group)
            dist.all_reduce(most, op=dist.ReduceOp.MAX, group=self.cpu_group)
            steps = float(most[0])
        return {
            "lr": self.optimizer.param_groups[0]["lr"],
            "scheduler_step": self.lr_scheduler.last_epoch,
            "optimizer_steps": int(steps),
            "weights_sq": float(sums[0]),
            "exp_avg_sq": float(sums[1]),
            "exp_avg_sq_sq": float(sums[2]),
        }

    def save(self, meta: SaveLoadMeta) -> None:
        super().save(meta)
        if not (meta.weight_format == "dcp" and meta.with_optim):
            return
        state = self.train_state()
        if not dist.is_initialized() or dist.get_rank() == 0:
            with open(os.path.join(meta.path, SCHEDULER_FILE), "w") as f:
                json.dump(self.lr_scheduler.state_dict(), f)
            with open(os.path.join(meta.path, STATE_FILE), "w") as f:
                json.dump(state, f)
        logger.info(f"recover checkpoint saved: {json.dumps(state)}")

    def load(self, meta: SaveLoadMeta) -> None:
        super().load(meta)
        if not (meta.weight_format == "dcp" and meta.with_optim):
            return
        path = os.path.join(meta.path, SCHEDULER_FILE)
        if os.path.isfile(path):
            with open(path) as f:
                self.lr_scheduler.load_state_dict(json.load(f))
        else:
            logger.warning(
                f"{meta.path} holds no learning-rate scheduler state (written by "
                "plain AReaL?): the schedule restarts from its first step"
            )
        state = self.train_state()
        path = os.path.join(meta.path, STATE_FILE)
        if os.path.isfile(path):
            with open(path) as f:
                saved = json.load(f)
            differ = [k for k in saved if not _same(saved[k], state.get(k))]
            if differ:
                raise RuntimeError(
                    f"the recover checkpoint in {meta.path} does not hold the state "
                    f"that was saved there ({', '.join(differ)} differ: saved "
                    f"{ {k: saved[k] for k in differ} }, loaded "
                    f"{ {k: state.get(k) for k in differ} }); it is damaged. Move it "
                    "away to start over."
                )
        logger.info(f"recover checkpoint restored: {json.dumps(state)}")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return b is not None and math.isclose(float(a), float(b), rel_tol=1e-9)
    return a == b

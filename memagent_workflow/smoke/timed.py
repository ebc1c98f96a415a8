"""The trainer of a smoke's child: the launch's own trainer class, its phases
written to the smoke's event log (`events`) as AReaL's `PPOTrainer` goes
through them.

Training run (``RUN_ENV=train``): ``launch`` (imports, tokenizer, scheduler,
until the actor is created), ``model load`` (the actor's workers start and load
the model; a reference model too), ``engine start`` (the rollout workers launch
the inference servers; AReaL connects the actor to them), ``server bench``
(`bench`: prefill and decode at the config's turn sizes), then per step
``rollout``, ``ref logprob pass``, ``logprob pass`` (step 2: ``logprob pass x16``
too, `with_doubled`), ``actor step``, ``weight
update``, ``save`` (the HF checkpoint) and ``recover checkpoint``. Resume run
(``resume``): ``resume`` is the whole start-up, the recover checkpoint loaded
through AReaL's recover path and its weights pushed to the servers, then
``resumed step``; a start-up that finds no checkpoint fails there.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from typing import Any

from memagent_workflow.preflight.actor_cost import REPEAT
from memagent_workflow.recovery.batches import server_addresses
from memagent_workflow.smoke.events import EventLog
from memagent_workflow.smoke.report import DOUBLED, RATE_STEP

BENCH_ENV = "MEMAGENT_SMOKE_BENCH"  # JSON: turns, prompt_tokens, new_tokens, seed

ACTOR_PHASES = {
    "prepare_batch": "rollout",
    "compute_logp": "logprob pass",
    "ppo_update": "actor step",
    "update_weights": "weight update",
}


def marked(log: EventLog, phase: str, method: Callable) -> Callable:
    """``method``, its calls written as ``phase``."""

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        log.start(phase)
        result = method(*args, **kwargs)
        log.end(phase)
        return result

    return call


def with_doubled(log: EventLog, method: Callable, raw: Callable) -> Callable:
    """``method`` (the actor's marked ``compute_logp``); at step 2's call, the
    batch again ``REPEAT`` times over through ``raw``, timed as ``DOUBLED`` and
    its result dropped: two sizes fit the pass's fixed cost (report.rates_of)."""
    calls = 0

    @functools.wraps(method)
    def call(batch: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        result = method(batch, *args, **kwargs)
        calls += 1
        if calls == RATE_STEP and isinstance(batch, list):
            log.start(DOUBLED)
            raw(batch * REPEAT, *args, **kwargs)
            log.end(DOUBLED)
        return result

    return call


def timed(trainer_cls: type) -> type:
    """``trainer_cls`` writing its phases to the smoke's event log."""

    class SmokeTrainer(trainer_cls):
        __doc__ = f"{trainer_cls.__name__} with the smoke's phase events."

        def __init__(self, config: Any, *args: Any, **kwargs: Any):
            self.smoke_log = EventLog.from_env()
            self.resuming = self.smoke_log.run == "resume"
            super().__init__(config, *args, **kwargs)
            if self.resuming:
                self._check_resumed()
            else:
                self.smoke_log.end("engine start")

        def _check_resumed(self) -> None:
            if self.recover_info is None:
                raise RuntimeError(
                    "the resume run found no recover checkpoint of the first run: "
                    "AReaL's recover path did not resume (recover.mode, "
                    "recover.freq_steps?)"
                )
            step = self.recover_info.last_step_info.global_step + 1
            self.smoke_log.end("resume", resumed_after_step=step)

        def _create_train_engine(self, actor_config: Any, alloc: Any) -> Any:
            if not self.resuming and actor_config is self.config.actor:
                self.smoke_log.switch("launch", "model load")
            return super()._create_train_engine(actor_config, alloc)

        def _init_rollout(self, *args: Any, **kwargs: Any) -> Any:
            if not self.resuming and not kwargs.get("is_eval", False):
                self.smoke_log.switch("model load", "engine start")
            return super()._init_rollout(*args, **kwargs)

        def train(self, *args: Any, **kwargs: Any) -> None:
            if self.resuming:
                with self.smoke_log.phase("resumed step"):
                    return super().train(*args, **kwargs)
            self._bench()
            raw_logp = self.actor.compute_logp
            for name, phase in ACTOR_PHASES.items():
                setattr(
                    self.actor,
                    name,
                    marked(self.smoke_log, phase, getattr(self.actor, name)),
                )
            self.actor.compute_logp = with_doubled(
                self.smoke_log, self.actor.compute_logp, raw_logp
            )
            if self.ref is not None:
                self.ref.compute_logp = marked(
                    self.smoke_log, "ref logprob pass", self.ref.compute_logp
                )
            return super().train(*args, **kwargs)

        def _bench(self) -> None:
            from memagent_workflow.smoke.bench import bench_servers

            spec = json.loads(os.environ.get(BENCH_ENV, "{}"))
            if not spec or self.smoke_log.path is None:
                return
            self.smoke_log.start("server bench")
            found = bench_servers(self.config, server_addresses(self.rollout), **spec)
            self.smoke_log.end("server bench", servers=found)

        def _save_hf(self, *args: Any, **kwargs: Any) -> None:
            with self.smoke_log.phase("save"):
                super()._save_hf(*args, **kwargs)

        def _save_recover_checkpoint(self, *args: Any, **kwargs: Any) -> None:
            with self.smoke_log.phase("recover checkpoint"):
                super()._save_recover_checkpoint(*args, **kwargs)

    SmokeTrainer.__name__ = SmokeTrainer.__qualname__ = f"Smoke{trainer_cls.__name__}"
    return SmokeTrainer

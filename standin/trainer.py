"""AReaL's PPO trainer with the CPU stand-in in place of SGLang.

AReaL 1.0.4 hard-codes its engine classes inside two private methods of
`PPOTrainer`: ``_create_train_engine`` (``FSDPPPOActor``) and
``_init_rollout`` (``RemoteSGLangEngine``, after ``SGLangConfig.build_args``,
which requires the sglang package; `MemAgentPPOTrainer` runs it as
``_rollout_engine_of``). The product's ``_create_train_engine`` builds the actor
and its reference model in ``actor_cls``: `StandinPPOTrainer` gives its own
(`StandinPPOActor`) and refuses backends other than fsdp. It overrides
``_rollout_engine_of`` for the sglang + fsdp and vllm + fsdp cases
(``rollout.backend``: `StandinSGLangEngine` or `StandinvLLMEngine`, each
launching the stand-in in its protocol with the server arguments AReaL builds
from ``sglang:`` or ``vllm:``), and ``_init_scheduler`` for a longer worker
start-up timeout. Nothing else differs: the scheduler, the controllers, the workers,
the staleness control and the weight updates are AReaL's. Without a
validation set it starts no eval-rollout worker (AReaL would start one and
never use it). With ``actor.use_lora`` the servers start with the initial
adapter as AReaL passes it (``sglang.lora_paths``, ``NAME-v0``); in the
one-process mode, where AReaL refuses LoRA, the trainer loads it itself. These overrides, and what they rely on, are listed and pinned
in ``memagent_workflow/areal_internals/pinned.py``: an AReaL upgrade that changes them
fails there first.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

from areal.api import Scheduler
from areal.api.alloc_mode import ModelAllocation
from areal.api.cli_args import (
    InferenceEngineConfig,
    PPOActorConfig,
    SchedulingStrategy,
    SchedulingStrategyType,
)
from areal.api.io_struct import get_versioned_lora_name
from areal.utils.environ import is_single_controller

from memagent_workflow.infra.scheduler_kinds import make_scheduler
from memagent_workflow.recovery.batches import server_addresses
from memagent_workflow.trainer.ppo_trainer import MemAgentPPOTrainer
from standin.actor import StandinPPOActor
from standin.backend import ENGINES, launched_server_args
from standin.config import StandinGRPOConfig
from standin.lora import load_adapter


class StandinPPOTrainer(MemAgentPPOTrainer):
    """The project's trainer, with the CPU stand-in's actor and rollout engines.

    Two ``standin:`` settings reach AReaL here: ``xccl_bucket_mb`` (the size of
    one xccl weight-update bucket; AReaL's 1024 MB holds the tiny model whole)
    and ``startup_timeout`` (how long the scheduler waits for a worker).
    """

    actor_cls: type = StandinPPOActor

    def __init__(
        self,
        config: StandinGRPOConfig,
        train_dataset: Any = None,
        valid_dataset: Any = None,
    ):
        self.standin = config.standin
        self.chance = config.standin.chance
        super().__init__(
            config, train_dataset=train_dataset, valid_dataset=valid_dataset
        )
        bucket_mb = self.standin.xccl_bucket_mb
        if bucket_mb is not None and self.weight_update_meta.type == "xccl":
            # The actor reads it from the meta the trainer sends each step.
            self.weight_update_meta.weight_chunked_mem_mb = bucket_mb

    @property
    def _lora_v0(self) -> str:
        """The initial adapter's name on the servers (AReaL's versioned name)."""
        return get_versioned_lora_name(self.config.gconfig.lora_name, 0)

    def _init_scheduler(self) -> Scheduler:
        # AReaL's 30 s to start a worker (import torch and AReaL) is too short
        # on a loaded 2-core machine; the rest is the product's choice of
        # scheduler (ports unique per run, see memagent_workflow.infra.scheduler).
        return make_scheduler(
            self.config,
            startup_timeout=self.standin.startup_timeout,
        )

    def _create_train_engine(
        self, actor_config: PPOActorConfig, alloc: ModelAllocation
    ) -> Any:
        if alloc.backend != "fsdp":
            raise ValueError(
                f"the CPU stand-in trains with fsdp only, got backend {alloc.backend}"
            )
        # The product builds the actor and its reference model in ``actor_cls``
        # (here StandinPPOActor: the pack-aware SDPA installed in its process).
        return super()._create_train_engine(actor_config, alloc)

    def _rollout_engine_of(
        self,
        rollout_config: InferenceEngineConfig,
        is_eval: bool = False,
        lora_path: str | None = None,
    ) -> Any:
        backend = self.rollout_alloc.backend
        if backend not in ENGINES:
            raise ValueError(
                "the CPU stand-in speaks SGLang's or vLLM's protocol: set "
                f"rollout.backend=sglang:dN or vllm:dN, got {self.config.rollout.backend}"
            )
        if self.config.rollout.return_routed_experts:
            raise ValueError("the CPU stand-in serves no MoE experts")
        if lora_path is not None and backend == "vllm":
            raise ValueError("the CPU stand-in serves no LoRA adapters in vLLM mode")
        if lora_path is not None:
            # As AReaL: a launched server starts with the initial adapter, v0.
            self.config.sglang.lora_paths = [f"{self._lora_v0}={lora_path}"]
        if is_eval and self.config.valid_dataset is None:
            # AReaL would start an eval-rollout worker that nothing uses.
            return None
        config = deepcopy(rollout_config)
        if config._version != "v1":
            raise ValueError("the CPU stand-in runs AReaL's v1 rollout controller")
        if is_eval:  # as AReaL: no staleness control, on the rollout servers
            config.max_head_offpolicyness = int(1e12)
            config.scheduling_strategy = SchedulingStrategy(
                type=SchedulingStrategyType.colocation, target="rollout"
            )
            for spec in config.scheduling_spec:
                spec.gpu = 0

        if not is_single_controller():
            engine = ENGINES[backend](config)
            engine.initialize(
                train_data_parallel_size=self.actor_alloc.parallel.dp_size
            )
            if lora_path is not None and not is_eval:
                # AReaL refuses LoRA outside its single controller (its servers
                # start before the actor saves v0); the CPU job's server was
                # started with --enable-lora, and v0 is loaded here.
                load_adapter(server_addresses(engine), self._lora_v0, lora_path)
            return engine

        controller = ENGINES[backend].as_controller(config, self.scheduler)
        init_kwargs: dict[str, Any] = dict(
            role="rollout",
            server_args=launched_server_args(
                self.config,
                backend,
                self.rollout_alloc.parallel.tp_size,
                self.rollout_alloc.parallel.pp_size,
            ),
        )
        if is_eval:
            init_kwargs["role"] = "eval-rollout"
            init_kwargs["server_infos"] = self.rollout.server_infos
        controller.initialize(**init_kwargs)
        return controller

"""What the preflight knows about the planned run: its config, the user's
estimates (command-line options) and the probes of this machine.

A *GPU run* is one whose layout asks for GPUs (``cluster.n_gpus_per_node`` or a
worker spec's ``gpu``); ``config_cpu.yaml`` asks for none, so its GPU items are
not applicable. The layout is read from ``rollout.backend`` and ``actor.backend``
(and the SPMD launcher's ``allocation_mode`` when set), as AReaL reads it; the
rollout and the actor share their GPUs when one's ``scheduling_strategy`` is a
colocation with the other (AReaL's ``PPOTrainer._is_actor_rollout_colocated``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from memagent_workflow.preflight.model import ModelShape, find_model_config
from memagent_workflow.preflight.probes import (
    HardwareProbe,
    PackageProbe,
    RayProbe,
    RayState,
    TorchHardware,
)
from memagent_workflow.preflight.rates import Measured, StepRates, step_rates


@dataclass
class Options:
    """The user's estimates and statements (``examples/preflight.py`` flags)."""

    turn_seconds: float | None = None
    # None: the measured rate (``measured``) or the constant (``rates``).
    decode_tokens_per_s: float | None = None
    gpu_memory_gib: float = 80.0
    download_mb_per_s: float = 100.0
    allow_download: bool = False
    shared_fs: bool = False
    max_rows: int | None = None
    # Achieved training TFLOP/s per GPU, for the step estimate where the actor's
    # rates are not measured (None: rates.TRAIN_TFLOPS).
    train_tflops: float | None = None
    # examples/smoke.py's rates (``--measured FILE``), fed to the step model.
    measured: Measured | None = None


@dataclass
class Layout:
    """GPUs per role, as AReaL allocates them."""

    rollout_servers: int  # SGLang data-parallel replicas
    rollout_tp: int
    rollout_gpus: int
    actor_gpus: int
    colocated: bool = False  # rollout and actor take turns on the same GPUs

    @property
    def gpus(self) -> int:
        if self.colocated:
            return max(self.rollout_gpus, self.actor_gpus)
        return self.rollout_gpus + self.actor_gpus


def _colocated_with(strategy: Any, target: str) -> bool:
    return (
        strategy is not None
        and str(getattr(strategy, "type", "")).endswith("colocation")
        and getattr(strategy, "target", None) == target
    )


@dataclass
class Run:
    """The config of the planned run and the probes the checks ask."""

    config: Any
    kind: str  # "train" or "eval"
    options: Options = field(default_factory=Options)
    hardware: HardwareProbe = field(default_factory=TorchHardware)
    packages: PackageProbe = field(default_factory=PackageProbe)
    ray: RayProbe = field(default_factory=RayProbe)
    # What builds the model, writes missing data and starts its own Ray in place
    # of a cluster, named in messages (a CPU stand-in entry); None: a cluster.
    inputs_by: str | None = None

    @property
    def scheduler(self) -> str | None:
        return self.config.scheduler.type

    @property
    def is_eval(self) -> bool:
        return self.kind == "eval"

    @property
    def gpu_run(self) -> bool:
        specs = [
            *self.config.actor.scheduling_spec,
            *self.config.rollout.scheduling_spec,
        ]
        return self.config.cluster.n_gpus_per_node > 0 or any(s.gpu > 0 for s in specs)

    # Filled by the data checks, read by the time and disk checks.
    train_rows: int | None = None
    longest_context_chars: int | None = None

    @property
    def job_provides_inputs(self) -> bool:
        """Whether something stands in for a cluster (``inputs_by``): it then
        builds the model, writes missing data and starts its own Ray."""
        return self.inputs_by is not None

    @property
    def hook(self) -> str:
        """What stands in for the cluster, for messages."""
        return self.inputs_by or "the cluster"

    @property
    def servers_running(self) -> bool:
        """An eval against servers started elsewhere (``AREAL_LLM_SERVER_ADDRS``)."""
        return self.is_eval and self.scheduler is None and not self.allocation_mode

    @property
    def allocation_mode(self) -> str:
        return getattr(self.config, "allocation_mode", "") or ""

    @cached_property
    def layout(self) -> Layout:
        from areal.api.alloc_mode import ModelAllocation

        rollout = ModelAllocation.from_str(self.config.rollout.backend, name="rollout")
        servers, tp = rollout.parallel.dp_size, rollout.parallel.tp_size
        rollout_gpus = 0 if self.servers_running else rollout.parallel.world_size
        actor_gpus = 0
        colocated = False
        if not self.is_eval:
            actor = ModelAllocation.from_str(self.config.actor.backend, name="actor")
            actor_gpus = actor.parallel.world_size
            colocated = _colocated_with(
                getattr(self.config.rollout, "scheduling_strategy", None), "actor"
            ) or _colocated_with(
                getattr(self.config.actor, "scheduling_strategy", None), "rollout"
            )
        return Layout(
            servers, tp, rollout_gpus, actor_gpus, colocated and rollout_gpus > 0
        )

    @property
    def actor_offloads(self) -> bool:
        """Whether the actor leaves its GPU between its passes (colocated with
        the rollout, or ``actor.offload``), as AReaL's trainer decides."""
        return self.layout.colocated or bool(
            getattr(self.config.actor, "offload", False)
        )

    @cached_property
    def model(self) -> tuple[ModelShape | None, str]:
        """The model's shape from its config.json, or None and why not."""
        return find_model_config(
            self.config.actor.path, allow_download=self.options.allow_download
        )

    @cached_property
    def rates(self) -> StepRates:
        """The step model's rates: measured, flagged or the constants."""
        return step_rates(self.options)

    @cached_property
    def ray_state(self) -> RayState:
        return self.ray.probe()

    @cached_property
    def gpus(self):
        return self.hardware.gpus()

    @property
    def gpu_memory_bytes(self) -> tuple[int, str]:
        """Memory of one GPU: the smallest visible, else the assumed size."""
        if self.gpus:
            g = min(self.gpus, key=lambda g: g.total_bytes)
            return g.total_bytes, f"{g.name}"
        gib = self.options.gpu_memory_gib
        return int(gib * 2**30), f"assumed {gib:g} GiB GPU (--gpu-memory-gib)"

"""The rollout engine a run starts, SGLang or vLLM (AReaL 1.0.4's two), and what
the checks read from its config section: the memory share, the serving dtype,
the key that frees its memory while a colocated actor trains, its LoRA slots.

The engine is the word before the colon of ``rollout.backend`` (``vllm:d4p1t1``),
which AReaL's trainer reads to pick ``RemoteSGLangEngine`` or ``RemotevLLMEngine``;
the SPMD launcher's ``allocation_mode`` must name the same one.

Memory: SGLang's ``mem_fraction_static`` and vLLM's ``gpu_memory_utilization``
are both a share of the whole GPU for the server's weights and KV cache. They
differ when an actor already sits on the GPU (colocated): SGLang takes its share
out of what is free, so the actor's weights come out of the KV cache; vLLM
refuses to start unless its whole share is free (``vllm/v1/worker/utils.py``:
"Free memory on device ... is less than desired GPU memory utilization").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memagent_workflow.infra.engines import allocation_backend, rollout_backend

if TYPE_CHECKING:
    from memagent_workflow.preflight.run import Run

# AReaL 1.0.4's pyproject.vllm.toml (commit a0f3dca2) pins vllm==0.19.1; AReaL
# checks no vLLM version at run time (SGLangConfig.build_args checks SGLang's):
# its server extension (areal/engine/vllm_ext/areal_vllm_server.py) imports
# vLLM's module layout of that release and fails at import on another.
VLLM_PINNED = "0.19.1"
# vllm 0.19.1's own requirement: its compiled kernels are built for this torch.
VLLM_TORCH = "2.10.0"
SGLANG_LORA_SLOTS = 8  # SGLang's max_loras_per_batch default (AReaL does not pass it)


@dataclass(frozen=True)
class Engine:
    """One rollout engine's names in AReaL's config."""

    name: str  # the backend word and the config section: sglang | vllm
    label: str  # for messages: SGLang | vLLM
    fraction_key: str  # its share of the GPU
    saver_key: str  # frees its GPU memory while a colocated actor trains
    start_s: int  # a start from local disk: weights, compilation, CUDA graphs

    @property
    def fraction_name(self) -> str:
        return f"{self.name}.{self.fraction_key}"

    def section(self, config: Any) -> Any:
        return getattr(config, self.name)

    def fraction(self, config: Any) -> float:
        value = getattr(self.section(config), self.fraction_key)
        return 0.9 if value is None else float(value)  # SGLang's None: AReaL's 0.9

    def dtype(self, config: Any) -> str:
        return self.section(config).dtype

    def kv_dtype(self, config: Any) -> str:
        """The KV cache's dtype: SGLang's ``kv_cache_dtype``; AReaL's vLLMConfig
        has no such key, so vLLM's cache takes the serving dtype."""
        kv = getattr(self.section(config), "kv_cache_dtype", None)
        return self.dtype(config) if kv in (None, "auto") else kv

    def memory_saver(self, config: Any) -> bool:
        return bool(getattr(self.section(config), self.saver_key, False))

    def lora_slots_rank(self, config: Any) -> tuple[int, int]:
        """Adapters the server allocates GPU buffers for, and at which rank:
        SGLang 8 at ``max_lora_rank`` (default the actor's), vLLM ``max_loras``
        at ``max_lora_rank`` (AReaL's defaults 8 and 16)."""
        sec, actor = self.section(config), config.actor
        if self.name == "vllm":
            return int(sec.max_loras), int(sec.max_lora_rank)
        return SGLANG_LORA_SLOTS, int(sec.max_lora_rank or actor.lora_rank)


SGLANG = Engine("sglang", "SGLang", "mem_fraction_static", "enable_memory_saver", 120)
# vLLM compiles the model with torch.compile on its first start (cached under
# VLLM_CACHE_ROOT) before it captures CUDA graphs: twice SGLang's allowance.
VLLM = Engine("vllm", "vLLM", "gpu_memory_utilization", "enable_sleep_mode", 240)
ENGINES = {e.name: e for e in (SGLANG, VLLM)}


def engine_for(config: Any) -> Engine:
    """The engine the run's servers speak, chosen as the trainer and the eval
    choose it (``infra/engines.py``): ``allocation_mode``'s when it names one,
    else ``rollout.backend``'s; SGLang for an unknown word (AReaL refuses it at
    start). A disagreement of the two fails ``packages.check_engine``."""
    try:
        return ENGINES[rollout_backend(config)]
    except ValueError:
        launched = allocation_backend(getattr(config, "allocation_mode", "") or "")
        return ENGINES.get(launched or "", SGLANG)


def engine_of(run: Run) -> Engine:
    return engine_for(run.config)

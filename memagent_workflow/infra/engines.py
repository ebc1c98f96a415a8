"""Which inference engine a run talks to: SGLang or vLLM, as AReaL reads it.

AReaL 1.0.4 picks the engine from ``rollout.backend`` (``sglang:d4`` or
``vllm:d4``; `PPOTrainer._init_rollout` builds `RemoteSGLangEngine` or
`RemotevLLMEngine` from it), and its SPMD launcher starts the servers that
``allocation_mode`` names (``vllm:d4p1t1+fsdp:d4p1t1``). An eval beside that
launcher must speak to the servers the launcher started, so ``allocation_mode``,
when set, names the backend; when both are set they must agree.
"""

from __future__ import annotations

import re
from typing import Any

BACKENDS = ("sglang", "vllm")


def allocation_backend(allocation_mode: str) -> str | None:
    """The inference backend an SPMD ``allocation_mode`` names, if any."""
    found = set(re.findall(r"(?<![\w])(sglang|vllm)(?=[\[(:])", allocation_mode or ""))
    if len(found) > 1:
        raise ValueError(f"allocation_mode {allocation_mode!r} names both engines")
    return found.pop() if found else None


def rollout_backend(config: Any) -> str:
    """``sglang`` or ``vllm``: ``allocation_mode``'s when set, else
    ``rollout.backend``'s (``ValueError`` if they disagree)."""
    from areal.api.alloc_mode import ModelAllocation

    own = ModelAllocation.from_str(config.rollout.backend, name="rollout").backend
    if own not in BACKENDS:
        raise ValueError(f"rollout.backend {config.rollout.backend!r}: not sglang/vllm")
    launched = allocation_backend(getattr(config, "allocation_mode", "") or "")
    if launched is not None and launched != own:
        raise ValueError(
            f"allocation_mode={config.allocation_mode} starts {launched} servers but "
            f"rollout.backend={config.rollout.backend} speaks {own}: set "
            f"rollout.backend={launched}:dN too"
        )
    return own


def engine_class(backend: str) -> type:
    """AReaL's remote engine for ``backend``."""
    from areal.engine import RemoteSGLangEngine, RemotevLLMEngine

    return RemotevLLMEngine if backend == "vllm" else RemoteSGLangEngine


def server_args(config: Any, backend: str, tp_size: int, pp_size: int = 1) -> dict:
    """The arguments of a server AReaL launches, from ``sglang:`` or ``vllm:``
    (`SGLangConfig.build_args` needs the sglang package; vLLM's needs nothing)."""
    from areal.api.cli_args import SGLangConfig, vLLMConfig

    if backend == "vllm":
        return vLLMConfig.build_args(
            vllm_config=config.vllm, tp_size=tp_size, pp_size=pp_size
        )
    return SGLangConfig.build_args(
        sglang_config=config.sglang, tp_size=tp_size, pp_size=pp_size, base_gpu_id=0
    )

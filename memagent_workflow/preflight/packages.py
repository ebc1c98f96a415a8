"""Packages a GPU run needs: the rollout engine (SGLang at the version AReaL
checks, or vLLM at the version AReaL's vLLM variant pins, with the torch it is
built for), a FlashAttention from which transformers' functions import, torch
built with CUDA, NCCL, and the project's environment on ``PATH`` (AReaL starts
its workers and the engine's server as a bare ``python3``).

The FlashAttention trap: SGLang 0.5.10.post1 pulls ``flash-attn-4``, whose
``flash_attn`` package holds only ``cute/``. transformers then reports
flash_attn available (version 4.x >= 2.1.0), and the FSDP actor's model load
fails on ``from flash_attn import flash_attn_func``. So the check imports the
very names transformers imports. vLLM 0.19.1 brings no ``flash_attn`` at all
(its kernels are ``vllm.vllm_flash_attn``, which transformers does not import):
the actor needs FlashAttention 2 built for torch 2.10 there, whatever the engine.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from packaging.version import Version

from memagent_workflow.infra.engines import rollout_backend
from memagent_workflow.preflight.engine import VLLM_PINNED, VLLM_TORCH, engine_of
from memagent_workflow.preflight.verdict import Check, fail, not_applicable, ok, warn

if TYPE_CHECKING:
    from memagent_workflow.preflight.run import Run

FAMILY = "packages"
# areal/api/cli_args.py, SGLangConfig.build_args: "Needs sglang>=0.5.10.post1".
SGLANG_MIN = "0.5.10.post1"
SGLANG_PINNED = "0.5.10.post1"  # pyproject.toml's gpu extra
# transformers' modeling_flash_attention_utils imports these, per attn_impl.
FLASH_IMPORTS = {
    "flash_attention_2": {
        "flash_attn": ("flash_attn_func", "flash_attn_varlen_func"),
        "flash_attn.bert_padding": ("pad_input", "unpad_input"),
    },
    "flash_attention_3": {
        "flash_attn_interface": ("flash_attn_func", "flash_attn_varlen_func"),
    },
}
# AReaL packs several rows into one sequence with cu_seq_lens and no mask;
# these backends would let the rows attend to each other.
UNPACKED_IMPLS = ("sdpa", "eager")
VLLM_INSTALL = (
    "uv sync --locked --project envs/vllm, then source envs/vllm/.venv/bin/activate"
)
# Why the actor's FlashAttention import fails, per engine environment.
FLASH_WHY = {
    "sglang": "SGLang's flash-attn-4 ships flash_attn/cute only; install "
    "FlashAttention 2 as docs/gpu.md says.",
    "vllm": "vLLM brings no flash_attn (its own kernels are vllm_flash_attn); "
    "install FlashAttention 2 built for torch 2.10, or set "
    "actor.attn_impl=kernels-community/flash-attn2 (docs/gpu-vllm.md).",
}


def check_engine(run: Run) -> Check:
    """The package of the engine the run's servers speak (``engine_of``), once
    ``allocation_mode`` and ``rollout.backend`` name the same one."""
    engine = engine_of(run)
    if not run.gpu_run:
        return not_applicable(FAMILY, engine.name, f"CPU run: no {engine.label} server")
    if run.servers_running:
        return not_applicable(
            FAMILY, engine.name, "eval against servers already running"
        )
    try:
        rollout_backend(run.config)
    except ValueError as exc:
        return fail(
            FAMILY, engine.name, str(exc).split(": set ")[0], "one engine", str(exc)
        )
    return check_vllm(run) if engine.name == "vllm" else check_sglang(run)


def check_vllm(run: Run) -> Check:
    """vLLM at AReaL's pin, with the torch its kernels are built for (a GPU run
    that starts vLLM servers: `check_engine`)."""
    name = "vllm"
    found = run.packages.version("vllm")
    torch = run.packages.version("torch")
    needed = f"{VLLM_PINNED} (AReaL 1.0.4's vLLM variant) with torch {VLLM_TORCH}"
    if found is None:
        return fail(
            FAMILY,
            name,
            "not installed",
            needed,
            f"AReaL's vLLM server extension imports vllm: {VLLM_INSTALL} "
            f"(pip: pip install vllm=={VLLM_PINNED})",
        )
    found = f"{found}, torch {torch}"
    if torch is None or Version(torch).base_version != VLLM_TORCH:
        return fail(
            FAMILY,
            name,
            found,
            needed,
            f"vLLM {VLLM_PINNED}'s kernels are built for torch {VLLM_TORCH}: "
            f"{VLLM_INSTALL}",
        )
    if Version(run.packages.version("vllm") or "0") != Version(VLLM_PINNED):
        return fail(
            FAMILY,
            name,
            found,
            needed,
            "AReaL's server extension (areal_vllm_server.py) imports vLLM's "
            f"{VLLM_PINNED} module layout: {VLLM_INSTALL}",
        )
    return ok(FAMILY, name, found, needed)


def check_sglang(run: Run) -> Check:
    """SGLang at AReaL's minimum (a GPU run that starts SGLang servers:
    `check_engine`)."""
    name = "sglang"
    found = run.packages.version("sglang")
    needed = f">= {SGLANG_MIN} (AReaL's check), pinned {SGLANG_PINNED}"
    if found is None:
        return fail(
            FAMILY,
            name,
            "not installed",
            needed,
            f"AReaL refuses to build SGLang's arguments without it: uv sync --extra gpu "
            f"(pip: pip install sglang=={SGLANG_PINNED})",
        )
    if Version(found) < Version(SGLANG_MIN):
        return fail(
            FAMILY, name, found, needed, f"AReaL raises 'Needs sglang>={SGLANG_MIN}'"
        )
    if Version(found) != Version(SGLANG_PINNED):
        return warn(
            FAMILY,
            name,
            found,
            needed,
            f"not the version this project was checked against ({SGLANG_PINNED})",
        )
    return ok(FAMILY, name, found, needed)


def check_flash_attention(run: Run) -> Check:
    name = "FlashAttention (actor.attn_impl)"
    if run.is_eval:
        return not_applicable(FAMILY, name, "eval: no FSDP actor")
    impl = run.config.actor.attn_impl
    if not run.gpu_run:
        return not_applicable(FAMILY, name, f"CPU run (attn_impl {impl})")
    if impl in UNPACKED_IMPLS:
        return fail(
            FAMILY,
            name,
            f"attn_impl {impl}",
            "a varlen kernel: flash_attention_2 or flash_attention_3",
            f"AReaL packs rows into one sequence with no mask; {impl} would let them "
            "attend to each other. Install FlashAttention 2 (docs/gpu.md).",
        )
    if impl not in FLASH_IMPORTS:
        return warn(
            FAMILY,
            name,
            f"attn_impl {impl}",
            "flash_attention_2 / flash_attention_3 (checked here)",
            f"{impl} is not checked by the preflight",
        )
    module, names = next(iter(FLASH_IMPORTS[impl].items()))
    needed = f"from {module} import {', '.join(names)} (transformers' import)"
    top = module.split(".")[0]
    dists = run.packages.providers(top)
    versions = [f"{d} {run.packages.version(d)}" for d in dists]
    installed = ", ".join(versions) or "flash_attn"
    for module, names in FLASH_IMPORTS[impl].items():
        why = run.packages.import_names(module, names)
        if why:
            return fail(
                FAMILY,
                name,
                f"{installed}: {why}",
                needed,
                "the FSDP actor's model load would fail with this ImportError. "
                + FLASH_WHY[engine_of(run).name],
            )
    return ok(FAMILY, name, installed, needed)


def check_torch_cuda(run: Run) -> Check:
    name = "torch built with CUDA"
    if not run.gpu_run:
        return not_applicable(FAMILY, name, "CPU run")
    cuda = run.packages.torch_cuda()
    found = f"torch {run.packages.version('torch')}, CUDA {cuda}"
    if cuda is None:
        return fail(
            FAMILY, name, found, "a CUDA build", "install a CUDA build of torch"
        )
    return ok(FAMILY, name, found, "a CUDA build")


def check_nccl(run: Run) -> Check:
    name = "NCCL"
    if not run.gpu_run:
        return not_applicable(FAMILY, name, "CPU run: gloo")
    version = run.packages.nccl()
    if version is None:
        return fail(
            FAMILY,
            name,
            "not available in torch",
            "torch.distributed NCCL",
            "FSDP and xccl weight sync need NCCL: install a CUDA build of torch",
        )
    return ok(FAMILY, name, version, "torch.distributed NCCL")


def check_path_python(run: Run) -> Check:
    name = "python3 on PATH"
    if not run.gpu_run and run.scheduler is None:
        return not_applicable(FAMILY, name, "one-process run: nothing started")
    exe, prefix = run.packages.path_python_prefix()
    own = run.packages.own_prefix()
    needed = "this interpreter's environment"
    if prefix is not None and os.path.realpath(prefix) == os.path.realpath(own):
        return ok(FAMILY, name, exe or "", needed)
    return fail(
        FAMILY,
        name,
        f"{exe or 'none'} (environment {prefix})",
        f"{needed} ({own})",
        f"AReaL starts its workers and {engine_of(run).label} as a bare python3: "
        "activate the project's environment first (source .venv/bin/activate"
        + (", envs/vllm/.venv for vLLM)" if engine_of(run).name == "vllm" else ")"),
    )

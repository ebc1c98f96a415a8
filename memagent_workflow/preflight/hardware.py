"""GPUs: how many are visible against the layout, their compute capability
against SGLang's attention backend, and their free memory.

The GPUs come from the run's hardware probe (``probes.TorchHardware`` asks
torch, which honours ``CUDA_VISIBLE_DEVICES``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memagent_workflow.preflight.engine import engine_of
from memagent_workflow.preflight.verdict import Check, fail, not_applicable, ok, warn

if TYPE_CHECKING:
    from memagent_workflow.preflight.run import Run

FAMILY = "hardware"
GIB = 2**30
# SGLang 0.5.10's fa3 backend asserts SM 8.x (non-MLA) or 9.x; Blackwell (10.x,
# 12.x) needs flashinfer or triton.
FA3_MAJORS = (8, 9)


def gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"


def check_gpu_count(run: Run) -> Check:
    name = "GPUs"
    if not run.gpu_run:
        return not_applicable(FAMILY, name, "CPU run: the layout asks for no GPU")
    lay, cluster = run.layout, run.config.cluster
    if run.servers_running:
        return not_applicable(FAMILY, name, "eval against servers already running")
    roles = f"rollout {lay.rollout_gpus} + actor {lay.actor_gpus}"
    if lay.colocated:
        roles = f"rollout {lay.rollout_gpus} and actor {lay.actor_gpus} colocated"
    capacity = cluster.n_nodes * cluster.n_gpus_per_node
    if lay.gpus > capacity:
        return fail(
            FAMILY,
            name,
            f"{roles} = {lay.gpus} GPUs",
            f"<= cluster.n_nodes x n_gpus_per_node = {capacity}",
            "shrink rollout.backend / actor.backend or add nodes",
        )
    here = min(lay.gpus, cluster.n_gpus_per_node)
    found = f"{len(run.gpus)} visible on this node"
    needed = f"{here} on this node ({roles})"
    if run.scheduler == "ray" and cluster.n_nodes > 1:
        needed += f", {cluster.n_gpus_per_node} per node on {cluster.n_nodes} nodes"
    if len(run.gpus) >= here:
        return ok(FAMILY, name, found, needed)
    return fail(
        FAMILY,
        name,
        found + ("" if run.gpus else ": no CUDA device (torch sees none)"),
        needed,
        "run on the GPU node (CUDA_VISIBLE_DEVICES must show them), or change "
        "rollout.backend / actor.backend / cluster.n_gpus_per_node",
    )


def check_capability(run: Run) -> Check:
    name = "SM vs sglang.attention_backend"
    backend = getattr(run.config.sglang, "attention_backend", None)
    if not run.gpu_run or run.servers_running:
        return not_applicable(FAMILY, name, "no SGLang server started by this run")
    if engine_of(run).name != "sglang":
        return not_applicable(
            FAMILY, name, "rollout.backend is vllm: vLLM picks its kernels per GPU"
        )
    if not run.gpus:
        return not_applicable(FAMILY, name, "no GPU visible (see hardware: GPUs)")
    sms = sorted({g.capability for g in run.gpus})
    found = "SM " + ", ".join(f"{a}.{b}" for a, b in sms) + f", backend {backend}"
    if backend != "fa3":
        return ok(FAMILY, name, found, "any SM for this backend")
    bad = [f"{a}.{b}" for a, b in sms if a not in FA3_MAJORS]
    needed = "fa3: SM 8.x or 9.x (SGLang asserts otherwise)"
    if bad:
        return fail(
            FAMILY,
            name,
            found,
            needed,
            f"SGLang's fa3 backend asserts on SM {', '.join(bad)} (Blackwell): set "
            "sglang.attention_backend=flashinfer (or triton)",
        )
    return ok(FAMILY, name, found, needed)


def check_free_memory(run: Run, needed_bytes: int | None) -> Check:
    """Every visible GPU must have ``needed_bytes`` free (the larger role's need)."""
    name = "free GPU memory"
    if not run.gpu_run or run.servers_running:
        return not_applicable(FAMILY, name, "no GPU used by this run")
    if not run.gpus:
        return not_applicable(FAMILY, name, "no GPU visible (see hardware: GPUs)")
    used = [g for g in run.gpus if g.total_bytes - g.free_bytes > GIB]
    tight = min(run.gpus, key=lambda g: g.free_bytes)
    found = f"min {gib(tight.free_bytes)} free of {gib(tight.total_bytes)} (GPU {tight.index})"
    if needed_bytes is None:
        needed = "no other process on the GPUs"
        if used:
            return warn(
                FAMILY,
                name,
                found,
                needed,
                f"GPU(s) {[g.index for g in used]} hold memory of another process",
            )
        return ok(FAMILY, name, found, needed)
    needed = f">= {gib(needed_bytes)} free on every GPU"
    short = [g.index for g in run.gpus if g.free_bytes < needed_bytes]
    if short:
        return fail(
            FAMILY,
            name,
            found,
            needed,
            f"GPU(s) {short} lack free memory: stop the other processes on them",
        )
    return ok(FAMILY, name, found, needed)

"""Memory: the FSDP actor's and the rollout server's (SGLang or vLLM) per-GPU
needs against the GPU, and the settings a colocated layout needs. The estimates, from the model's shape as
AReaL 1.0.4 keeps it, are ``memory_estimate``'s.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from memagent_workflow.preflight import lora
from memagent_workflow.preflight.data import turn_budgets_of
from memagent_workflow.preflight.engine import engine_of
from memagent_workflow.preflight.hardware import gib
from memagent_workflow.preflight.memory_estimate import actor_memory, server_memory
from memagent_workflow.preflight.verdict import Check, fail, not_applicable, ok, warn

if TYPE_CHECKING:
    from memagent_workflow.preflight.run import Run

FAMILY = "memory"


# A colocated rollout's needs: AReaL's PPOTrainer._validate_cfg asks the first
# two; the server frees its memory only with its saver on (SGLang's memory
# saver; vLLM's sleep mode, whose /sleep and /wake_up vLLM serves only with
# VLLM_SERVER_DEV_MODE=1 in the server's environment, which AReaL does not set).
DEV_MODE = "VLLM_SERVER_DEV_MODE"


def colocation_keys(run: Run) -> tuple[str, ...]:
    engine = engine_of(run)
    keys = ("enable_offload=true", "actor.weight_update_mode=disk")
    keys += (f"{engine.name}.{engine.saver_key}=true",)
    return keys + ((f"{DEV_MODE}=1",) if engine.name == "vllm" else ())


def dev_mode(run: Run) -> bool:
    """Whether the rollout workers (and so their vLLM servers) get dev mode:
    exported here or set in the rollout's worker spec."""
    specs = run.config.rollout.scheduling_spec
    values = [os.environ.get(DEV_MODE)] + [s.env_vars.get(DEV_MODE) for s in specs]
    return any(v not in (None, "", "0") for v in values)


def colocation_gaps(run: Run) -> list[str]:
    """The colocation settings a colocated layout lacks (none when separate)."""
    if not run.layout.colocated:
        return []
    cfg = run.config
    have = [
        cfg.enable_offload,
        cfg.actor.weight_update_mode == "disk",
        engine_of(run).memory_saver(cfg),
    ]
    if engine_of(run).name == "vllm":
        have.append(dev_mode(run))
    keys = colocation_keys(run)
    return [key for key, ok_ in zip(keys, have, strict=True) if not ok_]


def _no_model(run: Run, name: str) -> Check | None:
    shape, why = run.model
    if shape is None:
        return warn(
            FAMILY,
            name,
            f"not estimated: {why}",
            "config.json of actor.path",
            "run where the model is cached, or pass --allow-download",
        )
    return None


def check_actor(run: Run) -> Check:
    name = "FSDP actor per GPU"
    if run.is_eval:
        return not_applicable(FAMILY, name, "eval: no FSDP actor")
    if not run.gpu_run:
        return not_applicable(FAMILY, name, "CPU run")
    if (missing := _no_model(run, name)) is not None:
        return missing
    if (bad := lora.check_keys(run, FAMILY, name)) is not None:
        return bad
    shape = run.model[0]
    dp = max(1, run.layout.actor_gpus)  # FSDP shards over every actor GPU
    est = actor_memory(shape, run.config, dp, run.actor_offloads)
    gpu, gpu_name = run.gpu_memory_bytes
    ref = f"ref {gib(est.ref)}"
    if est.ref_apart:
        ref = f"0 ({ref} offloaded in turn)"
    found = (
        f"{lora.describe(shape, run.config)} on {dp} GPU(s): weights {gib(est.weights)}"
        f" + grads {gib(est.grads)} + Adam {gib(est.adam)} "
        f"({run.config.actor.optimizer_dtype}) + {ref} = {gib(est.state)};"
        f" activations ~{gib(est.activations)}; load peak {gib(est.load_peak)}"
    )
    if run.layout.colocated:
        found += f"; {engine_of(run).label} offloaded while it trains (colocated)"
    offloads = [
        f"{role}.offload"
        for role in ("actor", "ref")
        if getattr(getattr(run.config, role, None), "offload", False)
    ]
    if offloads and not run.config.enable_offload:
        return fail(
            FAMILY,
            name,
            found,
            f"{', '.join(offloads)}: enable_offload=true",
            "set enable_offload=true (AReaL refuses offloading without it)",
        )
    needed = f"<= {gib(gpu)} ({gpu_name})"
    if est.state > gpu or est.load_peak > gpu:
        what = "the sharded state" if est.state > gpu else "loading the whole model"
        return fail(
            FAMILY,
            name,
            found,
            needed,
            f"{what} does not fit: more FSDP GPUs (actor.backend), "
            "actor.fsdp.memory_efficient_load=true for the load peak",
        )
    if est.steady > 0.95 * gpu:
        return warn(
            FAMILY,
            name,
            found,
            needed,
            "activations may not fit: lower actor.mb_spec.max_tokens_per_mb",
        )
    return ok(FAMILY, name, found, needed)


def check_server(run: Run) -> Check:
    engine = engine_of(run)
    name = f"{engine.label} KV cache per server"
    if not run.gpu_run or run.servers_running:
        return not_applicable(
            FAMILY, name, f"no {engine.label} server started by this run"
        )
    if (missing := _no_model(run, name)) is not None:
        return missing
    gpu, gpu_name = run.gpu_memory_bytes
    est = server_memory(run, run.model[0], gpu)
    share = engine.fraction(run.config)
    note = turn_budgets_of(run)[1]
    beside = f" - colocated actor {gib(est.beside)}" if run.layout.colocated else ""
    if engine.name == "vllm":  # outside vLLM's share: it must be free beside it
        beside = ""
    if est.adapters:
        beside += f" - LoRA buffers {gib(est.adapters)}"
    found = (
        f"pool {gib(est.pool)} ({engine.fraction_key} {share} of {gib(gpu)}) - weights "
        f"{gib(est.weights)}{beside} = {est.kv_tokens / 1e3:.0f}K KV tokens = "
        f"{est.turns_held} turns of {est.turn_tokens} tokens"
        + (f" ({note})" if note else "")
    )
    needed = f"{est.planned_turns} concurrent turns per server (planned)"
    if missing := colocation_gaps(run):
        return fail(
            FAMILY,
            name,
            found,
            "colocated: " + ", ".join(colocation_keys(run)),
            "set " + " ".join(missing) + " (AReaL refuses the first two at start; "
            f"without the last {engine.label} keeps its memory while the actor trains)",
        )
    if engine.name == "vllm" and est.beside and est.pool + est.beside > gpu:
        return fail(
            FAMILY,
            name,
            found + f"; colocated actor {gib(est.beside)} resident at its start",
            f"{engine.fraction_name} x GPU free beside the actor",
            "vLLM refuses to start with less free memory than its share: lower "
            f"{engine.fraction_name} below {(gpu - est.beside) / gpu:.2f}",
        )
    if est.kv_tokens <= run.config.gconfig.max_tokens:
        return fail(
            FAMILY,
            name,
            found,
            f"> gconfig.max_tokens ({run.config.gconfig.max_tokens}) KV tokens",
            "the weights leave no room for one turn: raise "
            f"{engine.fraction_name} or use TP (rollout.backend)",
        )
    if est.turns_held < est.planned_turns:
        return warn(
            FAMILY,
            name,
            found,
            needed,
            f"turns queue in {engine.label} (x{est.queue_factor:.1f} per turn); the "
            "time budget below counts it",
        )
    return ok(FAMILY, name, found, needed)

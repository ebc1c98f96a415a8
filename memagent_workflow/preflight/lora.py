"""LoRA (AReaL 1.0.4's ``actor.use_lora``): the adapter's size from the model's
shape, what it adds to the FSDP actor and to the rollout server, and the keys it
needs.

FSDP actor (``areal/engine/fsdp_engine.py``): the model is loaded in
``actor.optimizer_dtype`` (float32 unless set) and peft wraps it with
``autocast_adapter_dtype=False``, so the adapters take their base layer's
dtype: the frozen base *and* the adapters are stored in ``optimizer_dtype``;
only the adapters get gradients and optimizer state. ``optimizer_dtype:
bfloat16`` keeps the base as published (its bf16 compute copy is then the
stored weight itself) at the price of bf16 adapters, which want
``optimizer.type: adam_bf16`` (Kahan-compensated updates). Empty
``target_modules`` (or ``[all-linear]``) is peft's ``all-linear``: every linear
layer of the decoder, not the output layer.

Reference model: a KL term makes AReaL build ``ref:`` as an engine of its own,
without LoRA: a second copy of the base in ``ref.optimizer_dtype``. The actor's
base with its adapter switched off is not reused for it.

SGLang 0.5.10: with LoRA on, ``LoRAMemoryPool`` allocates A and B buffers for
``max_loras_per_batch`` adapters (SGLang's default 8; AReaL's ``SGLangConfig``
does not pass it) at ``max_lora_rank`` over the served target modules, in the
serving dtype, before the KV pool is sized: the KV cache loses 8 adapters' worth.
vLLM 0.19 does the same for ``vllm.max_loras`` adapters (AReaL's default 8) at
``vllm.max_lora_rank`` (AReaL's default 16, below the recipes' rank 32: vLLM
refuses a larger adapter). AReaL sends vLLM's LoRA updates through the disk
(``/v1/load_lora_adapter``) or xccl alike, and unloads no old version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memagent_workflow.preflight.engine import SGLANG_LORA_SLOTS, engine_for
from memagent_workflow.preflight.model import ModelShape
from memagent_workflow.preflight.verdict import Check, fail

if TYPE_CHECKING:
    from memagent_workflow.preflight.run import Run

# The decoder's linear layers (Qwen2/2.5/3, Llama-style): peft's all-linear.
ALL_LINEAR = (
    "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
)  # fmt: skip
# SGLang shards these along their input (row-parallel), the rest along their output.
ROW_PARALLEL = ("o_proj", "down_proj")
SGLANG_SLOTS = SGLANG_LORA_SLOTS


def uses_lora(config) -> bool:
    return bool(getattr(config.actor, "use_lora", False))


def target_modules(actor) -> tuple[str, ...]:
    """The adapted modules' names, as AReaL hands them to peft."""
    names = list(actor.target_modules or [])
    if not names or names == ["all-linear"]:
        return ALL_LINEAR
    return tuple(n.rsplit(".", 1)[-1] for n in names)


def module_dims(shape: ModelShape) -> dict[str, tuple[int, int]]:
    """(in, out) features of every linear layer a LoRA may adapt, per layer."""
    h, q, i = shape.hidden, shape.q_width, shape.intermediate
    kv = shape.kv_heads * shape.head_dim
    return {
        "q_proj": (h, q),
        "k_proj": (h, kv),
        "v_proj": (h, kv),
        "o_proj": (q, h),
        "gate_proj": (h, i),
        "up_proj": (h, i),
        "down_proj": (i, h),
    }


def _dims(
    shape: ModelShape, modules: tuple[str, ...]
) -> list[tuple[str, int, int, int]]:
    """(name, in, out, copies) of each adapted module the shape knows: one per
    layer, the LM head once (other names: `unknown_modules`)."""
    per_layer = module_dims(shape)
    found = [(m, *per_layer[m], shape.layers) for m in modules if m in per_layer]
    if "lm_head" in modules:
        found.append(("lm_head", shape.hidden, shape.vocab, 1))
    return found


def unknown_modules(actor) -> list[str]:
    """Target modules the count does not model (not a dense decoder's linears)."""
    return [m for m in target_modules(actor) if m not in (*ALL_LINEAR, "lm_head")]


def adapter_params(shape: ModelShape, rank: int, modules: tuple[str, ...]) -> int:
    """Parameters of a rank-``rank`` LoRA: A (rank x in) and B (out x rank) on each
    adapted linear layer, no bias (AReaL's ``bias: none``)."""
    return sum(n * rank * (i + o) for _, i, o, n in _dims(shape, modules))


def actor_adapter_params(shape: ModelShape, actor) -> int:
    return adapter_params(shape, actor.lora_rank, target_modules(actor))


def stored_and_trained(shape: ModelShape, config) -> tuple[int, int]:
    """(stored, trained) parameters of the actor: the model's both times without
    LoRA; with it, the frozen base plus the adapters, and the adapters."""
    if not uses_lora(config):
        return shape.params, shape.params
    adapter = actor_adapter_params(shape, config.actor)
    return shape.params + adapter, adapter


def server_adapter_bytes(shape: ModelShape, config, tp: int) -> int:
    """Bytes per GPU of the rollout server's LoRA buffers (0 without LoRA): its
    adapter slots at its ``max_lora_rank`` (``Engine.lora_slots_rank``), in its
    serving dtype; under TP a row-parallel layer splits its A, a column-parallel
    one its B."""
    if not uses_lora(config):
        return 0
    engine = engine_for(config)
    slots, rank = engine.lora_slots_rank(config)
    per = 0
    for name, i, o, n in _dims(shape, target_modules(config.actor)):
        i_, o_ = (i // tp, o) if name in ROW_PARALLEL else (i, o // tp)
        per += n * rank * (i_ + o_)
    return slots * per * (4 if engine.dtype(config) == "float32" else 2)


def describe(shape: ModelShape, config) -> str:
    """The actor row's parameters: the model's, or its frozen base and adapter."""
    if not uses_lora(config):
        return f"{shape.params / 1e9:.2f}B params"
    actor = config.actor
    mods = target_modules(actor)
    names = "all-linear" if mods == ALL_LINEAR else ",".join(mods)
    trained = actor_adapter_params(shape, actor) / 1e6
    return (
        f"{shape.params / 1e9:.2f}B frozen + LoRA r{actor.lora_rank}/"
        f"a{actor.lora_alpha} on {names}: {trained:.1f}M trained"
    )


def gaps(run: Run) -> list[str]:
    """What a LoRA run's config lacks, each with AReaL's reason (none without LoRA)."""
    cfg = run.config
    if not uses_lora(cfg):
        return []
    actor, found = cfg.actor, []
    if unknown := unknown_modules(actor):
        found.append(
            f"actor.target_modules among {', '.join(ALL_LINEAR)}, lm_head (the "
            f"preflight does not count {', '.join(unknown)})"
        )
    if not getattr(cfg.rollout, "use_lora", False):
        found.append(
            "rollout.use_lora=true (AReaL names the adapter on /generate only with "
            "it: the rollouts would sample the base model)"
        )
    name = cfg.gconfig.lora_name
    ev = getattr(cfg, "eval_gconfig", None)
    if ev is not None and ev.lora_name != name:
        found.append(
            f"eval_gconfig.lora_name={name} (AReaL loads only gconfig.lora_name's "
            f"adapter: validation would ask for one {engine_for(cfg).label} never "
            "loaded)"
        )
    if run.scheduler is None:
        found.append(
            "scheduler.type=local (AReaL's LoRA rollout refuses the SPMD launcher)"
        )
    if actor.fsdp.memory_efficient_load:
        found.append(
            "actor.fsdp.memory_efficient_load=false (rank 0 loads the checkpoint's "
            "keys into the peft-wrapped model with strict=False: no base weight matches)"
        )
    return found + _engine_gaps(cfg)


def _engine_gaps(cfg) -> list[str]:
    """What the rollout engine needs to serve the adapter."""
    actor, found = cfg.actor, []
    if engine_for(cfg).name == "vllm":
        vl = cfg.vllm
        if not vl.enable_lora:
            found.append("vllm.enable_lora=true (vLLM loads no adapter without it)")
        if vl.max_lora_rank < actor.lora_rank:
            found.append(
                f"vllm.max_lora_rank >= actor.lora_rank ({actor.lora_rank}; vLLM "
                f"refuses a larger adapter, AReaL's default is 16)"
            )
        return found
    if actor.weight_update_mode != "disk":
        found.append(
            "actor.weight_update_mode=disk (AReaL refuses xccl for LoRA with SGLang)"
        )
    if (sg_rank := cfg.sglang.max_lora_rank) and sg_rank < actor.lora_rank:
        found.append(f"sglang.max_lora_rank >= actor.lora_rank ({actor.lora_rank})")
    # AReaL keeps max_head_offpolicyness + 2 versions and loads the next first.
    kept = cfg.rollout.max_head_offpolicyness + 3
    if kept > (holds := min(cfg.sglang.max_loaded_loras, SGLANG_SLOTS)):
        found.append(
            f"rollout.max_head_offpolicyness + 3 <= {holds} adapters SGLang "
            f"holds (it would hold {kept} versions)"
        )
    return found


def check_keys(run: Run, family: str, name: str) -> Check | None:
    """A failed row when a LoRA run lacks a key it needs, else None."""
    if not (missing := gaps(run)):
        return None
    actor = run.config.actor
    found = f"actor.use_lora: r{actor.lora_rank} on {','.join(target_modules(actor))}"
    fix = "set " + ", ".join(m.split(" (", 1)[0] for m in missing)
    return fail(family, name, found, "LoRA: " + "; ".join(missing), fix)

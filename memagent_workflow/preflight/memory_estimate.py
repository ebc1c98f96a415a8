"""Per-GPU memory estimates from the model's shape, as AReaL 1.0.4 keeps the model.

FSDP actor (areal/engine/fsdp_engine.py): parameters are *stored* in
``optimizer_dtype`` (float32 by default: fp32 master weights; FSDP2's
mixed-precision policy casts to ``dtype`` for forward and backward), gradients
take the storage dtype, and AdamW keeps two moments in it too. All of it is
sharded over the actor's data-parallel ranks. The reference model is an FSDP
engine of its own, stored the same way, without gradients or optimizer. Before
sharding, every rank loads the *whole* model in the storage dtype onto its GPU
(unless ``actor.fsdp.memory_efficient_load``), while the actor's shards of the
earlier engine are already resident: that is the load peak; with LoRA, rank 0
also holds the whole state dict while it fills the shards. LoRA: ``lora``.

Rollout server (SGLang or vLLM, ``engine``): the weights in the serving dtype
split over TP, and a share of the GPU (``sglang.mem_fraction_static`` or
``vllm.gpu_memory_utilization``) for weights plus KV cache; the KV tokens left
decide how many turns run at once. vLLM also takes its activations and CUDA
graphs out of that share (not counted: its KV estimate here is a little high).

Taking turns: with ``ref.offload`` and an actor that leaves its GPU between its
passes (``actor.offload``, or colocated with the rollout), the reference model
is on the GPU only while the actor is not, so it counts apart. Colocated, the
server starts beside the actor's resident weights (the actor is built first):
SGLang takes them out of its pool, vLLM needs its whole share free beside them.
Both sides need ``enable_offload`` (torch_memory_saver), disk weight updates and
the engine's memory saver (``sglang.enable_memory_saver``,
``vllm.enable_sleep_mode``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memagent_workflow.preflight import lora
from memagent_workflow.preflight.data import turn_budgets_of
from memagent_workflow.preflight.engine import SGLANG, Engine, engine_of
from memagent_workflow.preflight.model import ModelShape
from memagent_workflow.trainer.kl_loss import kl_loss_coef

if TYPE_CHECKING:
    from memagent_workflow.preflight.run import Run

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


@dataclass(frozen=True)
class ActorMemory:
    """Bytes per actor GPU."""

    weights: int  # master weights (storage dtype), sharded
    grads: int
    adam: int
    ref: int
    activations: int  # rough: checkpoints, one layer's recompute, the logits
    load_peak: int
    ref_apart: bool = False  # the reference is on the GPU only while the actor is not

    @property
    def state(self) -> int:
        """What stays on the GPU through the actor's update."""
        return (
            self.weights + self.grads + self.adam + (0 if self.ref_apart else self.ref)
        )

    @property
    def steady(self) -> int:
        return self.state + self.activations


def ref_apart(config, actor_offloads: bool) -> bool:
    """Whether the reference model and the actor take turns on the GPU."""
    ref = config.ref
    return ref is not None and bool(getattr(ref, "offload", False)) and actor_offloads


def actor_memory(
    shape: ModelShape, config, dp: int, actor_offloads: bool = False
) -> ActorMemory:
    """What one of ``dp`` FSDP ranks (the actor's GPUs) holds, and its load peak
    (``actor_offloads``: the actor leaves the GPU between its passes)."""
    actor = config.actor
    n, trained = lora.stored_and_trained(shape, config)  # n = trained without LoRA
    store = DTYPE_BYTES[actor.optimizer_dtype]
    moments = 0
    if actor.optimizer is not None and actor.optimizer.type != "sgd":
        # adam_bf16 (AnyPrecisionAdamW): bf16 moments and a Kahan buffer
        moments = 3 * 2 if actor.optimizer.type == "adam_bf16" else 2 * store
    ref = 0
    ref_whole = 0
    if config.ref is not None and (actor.kl_ctl > 0 or kl_loss_coef(actor) > 0):
        ref_whole = shape.params * DTYPE_BYTES[config.ref.optimizer_dtype]
        ref = ref_whole // dp
    tokens = actor.mb_spec.max_tokens_per_mb or 16384
    compute = DTYPE_BYTES[actor.dtype]
    layer_in = shape.layers * tokens * shape.hidden * compute
    recompute = tokens * (4 * shape.hidden + 3 * shape.intermediate) * compute
    logits = tokens * shape.vocab * (compute + 4)  # and their fp32 log-softmax
    whole = n * store
    apart = ref_apart(config, actor_offloads) and ref_whole > 0
    # The reference loads beside the actor's shards, or alone once the actor
    # has left the GPU (it is offloaded before the KL reference is built).
    beside = 0 if actor_offloads else whole // dp
    # LoRA: rank 0 keeps the whole model's state_dict to broadcast into the new
    # shards (fsdp_engine.py: `full_state = self.model.state_dict()`), so both sit
    # on the GPU at once. Measured on an H100 (Qwen3-4B, LoRA r32, one GPU, fp32
    # storage): 30.6 GiB peak against 2 x 15.2 GiB (docs/gpu-measured.md).
    own = whole + whole // dp if actor.use_lora else whole
    peak = 0 if actor.fsdp.memory_efficient_load else max(own, beside + ref_whole)
    return ActorMemory(
        weights=whole // dp,
        grads=trained * store // dp,
        adam=trained * moments // dp,
        ref=ref,
        activations=(layer_in if actor.gradient_checkpointing else layer_in * 8)
        + recompute
        + logits,
        load_peak=peak,
        ref_apart=apart,
    )


@dataclass(frozen=True)
class ServerMemory:
    """One rollout server (TP group) on GPUs of ``gpu_bytes``."""

    weights: int  # per GPU
    pool: int  # the engine's share of the GPU
    kv_tokens: int
    turn_tokens: int
    planned_turns: int  # concurrent turns per server the config plans
    beside: int = 0  # a colocated actor's weights, resident when the server starts
    adapters: int = 0  # LoRA buffers, allocated before the KV cache
    engine: Engine = SGLANG

    @property
    def turns_held(self) -> int:
        return self.kv_tokens // max(1, self.turn_tokens)

    @property
    def queue_factor(self) -> float:
        """How many turns wait for one that runs (>= 1)."""
        return max(1.0, self.planned_turns / max(1, self.turns_held))


def turn_tokens(run: Run) -> int:
    """KV tokens of the fullest memory turn: its prompt (the real template, the
    memory, the chunk) and its new tokens, as the data check counts them."""
    return turn_budgets_of(run)[0][0].total


def planned_turns(run: Run) -> int:
    """Turns in flight per rollout server when the run is at full concurrency."""
    config = run.config
    if run.is_eval:
        episodes = config.eval.concurrency
    else:
        episodes = (
            config.rollout.max_concurrent_rollouts or config.rollout.consumer_batch_size
        ) * config.memagent.group_size
    return -(-episodes // max(1, run.layout.rollout_servers))


def server_memory(run: Run, shape: ModelShape, gpu_bytes: int) -> ServerMemory:
    """The rollout server's memory, for the engine ``rollout.backend`` names."""
    engine, cfg, tp = engine_of(run), run.config, run.layout.rollout_tp
    dtype = DTYPE_BYTES.get(engine.dtype(cfg), 2)
    kv_dtype = 1 if "fp8" in engine.kv_dtype(cfg) else dtype
    weights = shape.params * dtype // tp
    pool = int(engine.fraction(cfg) * gpu_bytes)
    beside = 0
    if run.layout.colocated:
        # The actor, built before the server, already holds its master weights.
        dp = max(1, run.layout.actor_gpus)
        beside = actor_memory(shape, cfg, dp, run.actor_offloads).weights
    adapters = lora.server_adapter_bytes(shape, cfg, tp)
    # SGLang sizes its pool from the memory left free: the actor's weights come
    # out of it. vLLM's share is of the whole GPU and must be free at its start.
    taken = beside if engine is SGLANG else 0
    kv = max(0, pool - weights - taken - adapters)
    kv //= shape.kv_bytes_per_token(tp, kv_dtype)
    turns, planned = turn_tokens(run), planned_turns(run)
    return ServerMemory(weights, pool, kv, turns, planned, beside, adapters, engine)

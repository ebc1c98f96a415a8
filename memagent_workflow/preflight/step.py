"""One training step's duration, estimated from the config and the model's shape.

Rollout: a step trains ``train_dataset.batch_size`` groups. With ``G`` groups in
flight (``rollout.max_concurrent_rollouts``), each lasting its turns times one
turn (``budgets.turn_seconds``: the turn's new tokens at ``--decode-tokens-per-s``,
slowed by the turns queued in SGLang's KV cache), the servers finish
``batch / G`` group durations per step. Prefill, shorter answers and the
validation every ``evaluator.freq_steps`` are not counted.

Actor: every turn of every episode is a row of at most the fullest turn's tokens;
each token goes through forward passes (``ModelShape.forward_flops``): the
reference model's (KL), the proximal recompute (``prox_logp_method: recompute``),
and the update's forward, backward (two forwards' worth) and, with gradient
checkpointing, its recomputed forward. With LoRA the backward is one forward's
worth: the frozen base needs the input gradients only (the adapters' own FLOPs,
~1%, are not counted, nor SGLang's slower LoRA decode). They run on the actor's
GPUs at ``--train-tflops`` each, by default the rate that reproduces the
original's measured update (MemAgent issue #31: 7B, 128 x 16 episodes, 2,100 s
on 32 H100s, its update being 4 forwards' worth).

Rollout and training overlap on separate GPUs when rollouts may run ahead
(``rollout.max_head_offpolicyness`` > 0): the step is the longer of the two;
colocated on the same GPUs, or fully on-policy, it is their sum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memagent_workflow.preflight.budgets import turn_seconds, turns_per_episode
from memagent_workflow.preflight.memory_estimate import turn_tokens
from memagent_workflow.trainer.kl_loss import kl_loss_coef

if TYPE_CHECKING:
    from memagent_workflow.preflight.run import Run


@dataclass(frozen=True)
class StepEstimate:
    """Seconds of one step's rollout and training, and how they combine."""

    rollout_s: float
    actor_s: float
    overlapped: bool
    rollout_how: str
    actor_how: str

    @property
    def seconds(self) -> float:
        if self.overlapped:
            return max(self.rollout_s, self.actor_s)
        return self.rollout_s + self.actor_s

    def describe(self) -> str:
        joined = "the longer, overlapped" if self.overlapped else "the sum, in turn"
        return (
            f"step estimate: ~{self.seconds:,.0f} s ({joined}): rollout "
            f"~{self.rollout_s:,.0f} s ({self.rollout_how}); actor "
            f"~{self.actor_s:,.0f} s ({self.actor_how})"
        )


def forward_passes(config) -> int:
    """Forward passes' worth of FLOPs per trained token in one step."""
    actor = config.actor
    passes = 3  # the update: forward and backward
    if getattr(actor, "use_lora", False):
        passes = 2  # a frozen base: the backward computes no weight gradients
    if actor.gradient_checkpointing:
        passes += 1
    if config.ref is not None and (actor.kl_ctl > 0 or kl_loss_coef(actor) > 0):
        passes += 1
    if actor.should_compute_prox_logp():
        passes += 1
    return passes


def step_estimate(run: Run) -> StepEstimate | None:
    """The estimate, or None where it cannot be made (eval, CPU, no model)."""
    shape = run.model[0]
    per_turn = turn_seconds(run)[0]
    turns = turns_per_episode(run)[0]
    if run.is_eval or not run.gpu_run or shape is None or None in (per_turn, turns):
        return None
    config = run.config
    batch = config.train_dataset.batch_size
    in_flight = config.rollout.max_concurrent_rollouts or batch
    group_s = turns * per_turn
    rollout_s = batch / in_flight * group_s
    rollout_how = (
        f"{batch} groups, {in_flight} in flight, {turns} turns x {per_turn:.0f} s"
    )
    seq = turn_tokens(run)
    tokens = batch * config.memagent.group_size * turns * seq
    passes = forward_passes(config)
    gpus = max(1, run.layout.actor_gpus)
    flops = passes * shape.forward_flops(seq) * tokens
    rate = run.options.train_tflops * 1e12
    actor_s = flops / (gpus * rate)
    actor_how = (
        f"{tokens / 1e6:.1f}M tokens x {passes} passes x "
        f"{shape.forward_flops(seq) / 1e9:.1f} GFLOP on {gpus} GPU(s) at "
        f"{run.options.train_tflops:g} TFLOP/s"
    )
    overlapped = not run.layout.colocated and config.rollout.max_head_offpolicyness > 0
    return StepEstimate(rollout_s, actor_s, overlapped, rollout_how, actor_how)

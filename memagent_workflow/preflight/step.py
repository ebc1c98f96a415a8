"""One training step's duration, estimated from the config, the model's shape
and the rates (``rates``: measured by ``examples/smoke.py``, else constants).

Rollout: a step trains ``train_dataset.batch_size`` groups. With ``G`` groups in
flight (``rollout.max_concurrent_rollouts``), each lasting its turns times one
turn (``budgets.turn_seconds``: the turn's new tokens at the decode rate, plus,
measured, the prefill of the turns a server runs at once, slowed by the turns
queued in the server's KV cache), the servers finish ``batch / G`` group
durations per step. Shorter answers and the validation every
``evaluator.freq_steps`` are not counted.

Actor: every turn of every episode is a row of at most the fullest turn's tokens.
The update (forward, backward and, with gradient checkpointing, its recomputed
forward) runs at the measured ``actor_train_tokens_per_s`` per GPU; the
reference model's pass (KL) and the proximal recompute (``prox_logp_method:
recompute``) at ``actor_logp_tokens_per_s``. Unmeasured, both come from the
model's FLOPs (``ModelShape.forward_flops``) at ``--train-tflops`` per GPU: the
update is 3 forwards' worth (backward as two; LoRA 2: the frozen base needs the
input gradients only, the adapters' own ~1% not counted), plus one with
gradient checkpointing; by default the rate that reproduces the original's
measured update (MemAgent issue #31: 7B, 128 x 16 episodes, 2,100 s on 32
H100s, its update being 4 forwards' worth).

Weight sync: the measured ``weight_update_s`` once per step (not counted
unmeasured). AReaL pauses generation for it, so it never overlaps the rollout.

Rollout and training overlap on separate GPUs when rollouts may run ahead
(``rollout.max_head_offpolicyness`` > 0): the step is the longer of the two,
plus the sync; colocated on the same GPUs, fully on-policy, or on CPU (the
roles share the cores), it is the sum. Measured by the smoke (``actor_cost``):
each logprob pass's fixed seconds and the update's, the tokens per row and the
step's other work.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from memagent_workflow.preflight.actor_cost import step_tokens
from memagent_workflow.preflight.budgets import turn_seconds, turns_per_episode
from memagent_workflow.preflight.memory_estimate import turn_tokens
from memagent_workflow.preflight.tree_ratio import actor_share
from memagent_workflow.trainer.kl_loss import kl_loss_coef

if TYPE_CHECKING:
    from memagent_workflow.preflight.run import Run


@dataclass(frozen=True)
class StepEstimate:
    """Seconds of one step's rollout, training and weight sync, and how they
    combine."""

    rollout_s: float
    update_s: float  # the actor's update pass
    logp_s: float  # one log-probability pass (reference, proximal)
    logp_passes: int
    sync_s: float
    overlapped: bool
    rollout_how: str
    actor_how: str
    sync_how: str = ""
    fixed_s: float = 0.0  # per logprob pass, whatever its tokens (actor_cost)
    update_fixed_s: float | None = None  # the update's; None: fixed_s
    other_s: float = 0.0  # the step's other work (actor_cost)

    @property
    def actor_s(self) -> float:
        update_fixed = (
            self.fixed_s if self.update_fixed_s is None else self.update_fixed_s
        )
        logp = self.logp_passes * (self.logp_s + self.fixed_s)
        return self.update_s + update_fixed + logp

    @property
    def seconds(self) -> float:
        if self.overlapped:
            return max(self.rollout_s, self.actor_s) + self.sync_s + self.other_s
        return self.rollout_s + self.actor_s + self.sync_s + self.other_s

    def with_actor(self, share: float = 1.0, logp_passes: int | None = None):
        """The step with the actor's work scaled by ``share`` and, given,
        ``logp_passes`` log-probability passes."""
        passes = self.logp_passes if logp_passes is None else logp_passes
        return replace(
            self,
            update_s=self.update_s * share,
            logp_s=self.logp_s * share,
            logp_passes=passes,
        )

    def describe(self) -> str:
        joined = "the longer, overlapped" if self.overlapped else "the sum, in turn"
        sync = f"; weight sync ~{secs(self.sync_s)} s" if self.sync_s else ""
        sync += f" ({self.sync_how})" if self.sync_how else ""
        other = (
            f"; other work ~{self.other_s:,.1f} s (measured)" if self.other_s else ""
        )
        return (
            f"step estimate: ~{secs(self.seconds)} s ({joined}{' + sync' * bool(sync)}"
            f"): rollout ~{secs(self.rollout_s)} s ({self.rollout_how}); actor "
            f"~{secs(self.actor_s)} s ({self.actor_how}){sync}{other}"
        )


def secs(value: float) -> str:
    """Seconds as the estimate shows them: whole above 10, else to a tenth
    (a CPU step's parts would all read 0 or 1)."""
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def update_passes(config) -> int:
    """Forward passes' worth of FLOPs per trained token in the update."""
    actor = config.actor
    passes = 2 if getattr(actor, "use_lora", False) else 3  # forward and backward
    return passes + (1 if actor.gradient_checkpointing else 0)


def logp_passes(config) -> int:
    """Log-probability passes per step: the reference model's and the proximal
    recompute, each one forward."""
    actor = config.actor
    ref = config.ref is not None and (actor.kl_ctl > 0 or kl_loss_coef(actor) > 0)
    return int(ref) + int(actor.should_compute_prox_logp())


def forward_passes(config) -> int:
    """Forward passes' worth of FLOPs per trained token in one step."""
    return update_passes(config) + logp_passes(config)


def step_estimate(run: Run) -> StepEstimate | None:
    """The estimate, or None where it cannot be made (eval; CPU without
    measured rates; no model shape for rates that need it)."""
    per_turn = turn_seconds(run)[0]
    turns = turns_per_episode(run)[0]
    if run.is_eval or None in (per_turn, turns):
        return None
    config, rates = run.config, run.rates
    batch = config.train_dataset.batch_size
    in_flight = config.rollout.max_concurrent_rollouts or batch
    rollout_s = batch / in_flight * turns * per_turn
    rollout_how = (
        f"{batch} groups, {in_flight} in flight, {turns} turns x {secs(per_turn)} s"
    )
    seq = turn_tokens(run)
    rows = batch * config.memagent.group_size * turns
    share, share_how = actor_share(run)  # tree training: a share of the rows
    tokens = step_tokens(rows, seq, rates.row_tokens.value) * share
    gpus = max(1, run.layout.actor_gpus)
    per_gpu = tokens / gpus
    train, logp = rates.actor_train.value, rates.actor_logp.value
    count = f"{tokens / 1e6:.1f}M" if tokens >= 1e5 else f"{tokens:,.0f}"
    how = [f"{count} tokens on {gpus} GPU(s)"]
    if rates.row_tokens.value:
        how[0] += f" ({rates.row_tokens.value:,.1f} a row, measured)"
    if rates.actor_fixed.value:
        how.append(f"{rates.actor_fixed.value:.2f} s fixed a pass (measured)")
    if rates.update_fixed.value is not None:
        how.append(f"{rates.update_fixed.value:.2f} s fixed the update (measured)")
    how += [share_how] * bool(share_how)
    if None in (train, logp):
        shape = run.model[0]
        if shape is None:
            return None
        tflops = rates.tflops.value * 1e12
        fwd = shape.forward_flops(seq)
        flops_how = (
            f"{fwd / 1e9:.1f} GFLOP a token per pass at {rates.tflops.value:g} "
            f"TFLOP/s{rates.tflops.note}"
        )
        if train is None:
            train = tflops / (update_passes(config) * fwd)
        if logp is None:
            logp = tflops / fwd
    else:
        flops_how = ""
    passes = logp_passes(config)
    how.append(_rate_how("update", train, rates.actor_train, update_passes(config)))
    if passes:
        how.append(_rate_how(f"{passes} logprob pass(es)", logp, rates.actor_logp, 1))
    if flops_how:
        how.append(flops_how)
    sync = rates.weight_update
    overlapped = not run.layout.colocated and config.rollout.max_head_offpolicyness > 0
    overlapped = overlapped and run.gpu_run  # on CPU the roles share the cores
    return StepEstimate(
        rollout_s=rollout_s,
        update_s=per_gpu / train,
        logp_s=per_gpu / logp,
        logp_passes=passes,
        sync_s=sync.value or 0.0,
        overlapped=overlapped,
        rollout_how=rollout_how,
        actor_how=", ".join(how),
        sync_how="measured" if sync.value else "",
        fixed_s=rates.actor_fixed.value or 0.0,
        update_fixed_s=rates.update_fixed.value,
        other_s=rates.step_other.value or 0.0,
    )


def _rate_how(what: str, value: float, rate, passes: int) -> str:
    if rate.value is not None:
        return f"{what} at {value:,.0f} tokens/s/GPU{rate.note}"
    return f"{what} {passes} forward(s)' worth"

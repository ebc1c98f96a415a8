"""The original MemAgent's KL to the reference model, as a loss term.

The original (verl's ``dp_actor.py`` with ``use_kl_loss``) adds
``kl_loss_coef * low_var_kl`` to the policy loss: per token ``kl = ref_logp -
logp`` (``logp`` the current policy's, with gradient), ``low_var_kl = exp(kl) -
kl - 1`` (Schulman's k3 estimator of KL(current || reference)), clamped to
[-10, 10], and averaged over the response tokens. AReaL 1.0.4 has no such
term: its ``actor.kl_ctl`` subtracts a KL penalty from the per-token reward,
outside the gradient. Here:

* ``actor.kl_loss_coef`` and ``actor.kl_loss_clamp``:
  `memagent_workflow.actor_config.MemAgentActorConfig`.
* `low_var_kl` and `kl_loss`: the per-token k3 and its token mean over the loss
  mask (AReaL's policy loss divides by the same count).
* `with_kl_loss`: AReaL's GRPO loss function plus ``coef * kl_loss``; it logs the
  per-token k3 (before the coefficient) as the stat ``kl_loss`` beside AReaL's
  ``actor_loss`` (``ppo_actor/update/kl_loss/avg`` in the exported stats).
  `MemAgentPPOActor.train_batch` wraps the loss function AReaL's
  ``PPOActor._ppo_update`` hands it, so the rest of AReaL's update is unchanged.

The reference log-probabilities come from AReaL's reference model (``ref:``),
which `MemAgentPPOTrainer` builds whenever ``kl_loss_coef > 0``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from areal.utils import stats_tracker

KL_STAT = "kl_loss"  # in the scope ppo_actor/update: ppo_actor/update/kl_loss/avg
KL_TOKENS = "kl_loss_tokens"  # its denominator: the loss mask


def kl_loss_coef(config: Any) -> float:
    """The KL-loss coefficient of an actor config (0 for AReaL's own class)."""
    return float(getattr(config, "kl_loss_coef", 0.0) or 0.0)


def low_var_kl(
    logprobs: torch.Tensor, ref_logprobs: torch.Tensor, clamp: float = 10.0
) -> torch.Tensor:
    """Per-token k3 estimate of KL(current || reference), clamped to [-clamp, clamp].

    With ``r = ref_logprobs - logprobs``: ``exp(r) - r - 1`` (never negative, so
    only the upper bound acts; its gradient is 0 where it does). ``r`` is first
    limited to [-(clamp + 1), log(2 (clamp + 1))], outside which the estimate
    already exceeds ``clamp``: no value changes, but ``exp`` cannot overflow
    into a NaN gradient. ``expm1(r) - r`` is the same function as the original's
    ``exp(r) - r - 1``, without its float32 cancellation near ``r = 0`` (where a
    policy close to the reference puts nearly every token).
    """
    r = ref_logprobs - logprobs
    r = r.clamp(min=-(clamp + 1.0), max=math.log(2.0 * (clamp + 1.0)))
    return (torch.expm1(r) - r).clamp(min=-clamp, max=clamp)


def kl_loss(
    logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor,
    loss_mask: torch.Tensor,
    clamp: float = 10.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The token mean of `low_var_kl` over ``loss_mask``, and the per-token values.

    The mean divides by the number of mask tokens (at least 1), as AReaL's
    policy loss does; tokens outside the mask get no value and no gradient.
    """
    mask = loss_mask.bool()
    per_token = low_var_kl(logprobs.float(), ref_logprobs.float(), clamp)
    total = torch.where(mask, per_token, 0.0).sum()
    return total / mask.count_nonzero().clamp(min=1), per_token


def with_kl_loss(
    loss_fn: Callable[..., torch.Tensor], coef: float, clamp: float = 10.0
) -> Callable[..., torch.Tensor]:
    """``loss_fn`` (AReaL's actor loss: ``(logprobs, entropy, input_data,
    **kwargs) -> loss``) plus ``coef`` times `kl_loss` against the batch's
    ``ref_logp``; the per-token k3 is logged as the stat ``kl_loss``."""

    def loss_with_kl(
        logprobs: torch.Tensor,
        entropy: torch.Tensor,
        input_data: dict[str, Any],
        **kwargs: Any,
    ) -> torch.Tensor:
        loss = loss_fn(logprobs, entropy, input_data, **kwargs)
        ref_logp = input_data.get("ref_logp")
        if ref_logp is None:
            raise ValueError(
                f"actor.kl_loss_coef={coef} needs the reference model's "
                "log-probabilities, but the batch has no ref_logp: set ref: (the "
                "trainer then computes them every step)"
            )
        mask = input_data["loss_mask"].bool()
        kl, per_token = kl_loss(logprobs, ref_logp, mask, clamp)
        stats_tracker.denominator(**{KL_TOKENS: mask})
        stats_tracker.stat(
            **{KL_STAT: per_token.detach().float()}, denominator=KL_TOKENS
        )
        return loss + coef * kl

    return loss_with_kl

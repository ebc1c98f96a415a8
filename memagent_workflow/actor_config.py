"""The actor's config: AReaL's `PPOActorConfig` plus the original MemAgent's KL loss.

It is the actor config itself (``actor:``) because under AReaL's single
controller each worker builds its actor from that config alone
(``cls(config=actor_config)``, the class shipped by its import path). The loss
is computed in `memagent_workflow.trainer.kl_loss`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from areal.api.cli_args import PPOActorConfig


@dataclass
class MemAgentActorConfig(PPOActorConfig):
    """AReaL's PPO actor config plus the original's KL loss."""

    kl_loss_coef: float = field(
        default=0.0,
        metadata={
            "help": "Coefficient of the original MemAgent's KL loss (verl's "
            "use_kl_loss; the paper: 0.001): adds kl_loss_coef x the token mean "
            "of low_var_kl = exp(r) - r - 1, r = ref_logp - logp, clamped to "
            "[-kl_loss_clamp, kl_loss_clamp], to the policy loss, with gradient. "
            "Needs ref:. Independent of kl_ctl (AReaL's KL penalty in the reward, "
            "no gradient); 0 = off."
        },
    )
    kl_loss_clamp: float = field(
        default=10.0,
        metadata={"help": "Bound of the per-token low_var_kl, > 0 (original: 10)."},
    )

    def __post_init__(self):
        super().__post_init__()
        if not self.kl_loss_coef >= 0:
            raise ValueError(
                f"actor.kl_loss_coef must be >= 0, got {self.kl_loss_coef}"
            )
        if not self.kl_loss_clamp > 0:  # 0 would zero the term, silently
            raise ValueError(
                f"actor.kl_loss_clamp must be > 0 (the bound of the per-token KL "
                f"of the KL loss; actor.kl_loss_coef=0 turns the loss off), got "
                f"{self.kl_loss_clamp}"
            )

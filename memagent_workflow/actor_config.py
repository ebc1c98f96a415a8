"""The actor's config: AReaL's `PPOActorConfig` plus the original MemAgent's KL
loss and how tree training cuts its mini-batches and pads its tries.

It is the actor config itself (``actor:``) because under AReaL's single
controller each worker builds its actor from that config alone
(``cls(config=actor_config)``, the class shipped by its import path). The loss
is computed in `memagent_workflow.trainer.kl_loss`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from areal.api.cli_args import PPOActorConfig

# actor.tree_minibatches: how the tree actor cuts its mini-batches (trainer/tree_actor.py)
TREE_MINIBATCHES = ("groups", "dealt", "runs")
# actor.tree_padding: what each trie is padded to (trainer/trie_padding.py)
TREE_PADDING = ("block", "maximum")


@dataclass
class MemAgentActorConfig(PPOActorConfig):
    """AReaL's PPO actor config plus the original's KL loss and the tries'
    mini-batches."""

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
    tree_minibatches: str = field(
        default="groups",
        metadata={
            "help": "With enable_tree_training, how the update's ppo_n_minibatches "
            "mini-batches are cut from the rows in trie order: 'groups', runs of "
            "whole groups (the paper's mini-batch: a turn's shared prefix computed "
            "once); 'dealt', every n-th row (each group in every mini-batch, as "
            "AReaL's packed split spreads it; a prefix computed once per "
            "mini-batch, so only for a few mini-batches); 'runs', each group cut "
            "into ppo_n_minibatches runs of rows sharing a prefix and the runs "
            "dealt (each group in every mini-batch, a turn's prefix computed once "
            "while a group has no more turns than mini-batches): "
            "docs/tree-training.md.",
            "choices": list(TREE_MINIBATCHES),
        },
    )

    tree_padding: str = field(
        default="block",
        metadata={
            "help": "With enable_tree_training, what each trie is padded to: "
            "'block', its own tokens rounded up to FlexAttention's block (128; "
            "AReaL compiles flex_attention with dynamic shapes); 'maximum', "
            "mb_spec.max_tokens_per_mb as AReaL pads it (one shape: for "
            "AREAL_DISABLE_FLEX_ATTENTION_DYNAMIC=1, where each size compiles "
            "anew). Padded positions are computed: docs/tree-training.md.",
            "choices": list(TREE_PADDING),
        },
    )

    def __post_init__(self):
        super().__post_init__()
        if not self.kl_loss_coef >= 0:
            raise ValueError(
                f"actor.kl_loss_coef must be >= 0, got {self.kl_loss_coef}"
            )
        if self.tree_minibatches not in TREE_MINIBATCHES:
            raise ValueError(
                "actor.tree_minibatches must be 'groups', 'dealt' or 'runs', got "
                f"{self.tree_minibatches!r}"
            )
        if self.tree_padding not in TREE_PADDING:
            raise ValueError(
                "actor.tree_padding must be 'block' or 'maximum', got "
                f"{self.tree_padding!r}"
            )
        if not self.kl_loss_clamp > 0:  # 0 would zero the term, silently
            raise ValueError(
                f"actor.kl_loss_clamp must be > 0 (the bound of the per-token KL "
                f"of the KL loss; actor.kl_loss_coef=0 turns the loss off), got "
                f"{self.kl_loss_clamp}"
            )

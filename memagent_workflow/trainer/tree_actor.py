"""The actor's side of AReaL's tree training: rows in trie order, tokens counted.

With ``actor.enable_tree_training`` (AReaL's FSDP engine; ``areal/models/
tree_attn/``) a micro-batch's rows become tries whose shared prefixes are
computed once. `SharesPrefixes` (a base of the project's actor, before AReaL's
class) makes rows that share a prefix meet in one trie
(`memagent_workflow.trainer.shared_prefix`):

* ``compute_logp`` (the proximal pass and the reference model's) hands AReaL
  each group's rows in trie order and puts the results back in the rows' order;
* ``ppo_update`` puts each group's rows in trie order and makes its own
  ``ppo_n_minibatches`` mini-batches (AReaL's split, first fit decreasing by
  length, would scatter a group's turn over all of them): by default runs of
  consecutive rows cut where neighbours share least, whole groups as the
  paper's mini-batches; with ``actor.tree_minibatches: dealt``, the rows dealt
  in turn, each group in every mini-batch as AReaL's packed split has it; with
  ``runs``, each group cut into runs of rows sharing a prefix and the runs
  dealt, each group in every mini-batch and a turn's prefix computed once. Each
  runs AReaL's update (``PPOActor._ppo_update``) as one mini-batch, so the
  loss, its proximal term, the KL loss and LoRA are AReaL's and the project's
  as ever.

Packed (tree training off) nothing changes but the counting: every step
records ``memagent/actor_tokens_rows`` (the tokens of the rows the training
pass trained on) and ``memagent/actor_tokens_computed`` (the tokens its
micro-batches held, padding included: what its forward passes computed).
With ``actor.tree_padding: block`` each trie is padded only to FlexAttention's
block (`memagent_workflow.trainer.trie_padding`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch
from areal.utils import logging, stats_tracker
from areal.utils.data import concat_batch

from memagent_workflow.trainer.shared_prefix import (
    contiguous_minibatches,
    dealt_minibatches,
    dealt_runs,
    inverse,
    take_rows,
    trie_order,
)
from memagent_workflow.trainer.trie_padding import pad_to_block

logger = logging.getLogger("MemAgentTreeActor")

STAT_ROWS = "memagent/actor_tokens_rows"
STAT_COMPUTED = "memagent/actor_tokens_computed"


def mb_tokens(mb_list: Any) -> int:
    """Tokens an engine's micro-batches hold, padding included."""
    padded = getattr(mb_list, "padded_to_lengths", None)
    return int(sum(padded if padded else mb_list.group_lens))


def token_counts(stats: dict[str, Any]) -> dict[str, int | None]:
    """The step line's token counts, from the exported stats (None: not recorded)."""
    rows, computed = stats.get(STAT_ROWS), stats.get(STAT_COMPUTED)
    return {
        "actor_tokens_rows": None if rows is None else round(rows),
        "actor_tokens_computed": None if computed is None else round(computed),
    }


def saved_share(line: dict[str, Any]) -> float | None:
    """The share of the row tokens the actor did not compute (negative: padding
    cost more than sharing saved)."""
    rows, computed = line.get("actor_tokens_rows"), line.get("actor_tokens_computed")
    if not rows or computed is None:
        return None
    return 1.0 - computed / rows


def check_tree_config(actor: Any, where: str = "actor") -> None:
    """Refuse, before any worker starts, a tree-training config AReaL refuses at
    its first batch."""
    if not getattr(actor, "enable_tree_training", False):
        return
    if not actor.pad_to_maximum:
        raise ValueError(
            f"{where}.enable_tree_training=true needs {where}.pad_to_maximum=true "
            "(AReaL builds tries only with it; actor.tree_padding then says what "
            "each is padded to)"
        )
    size = actor.mb_spec.max_tokens_per_mb
    if size is None or size % 128:
        raise ValueError(
            f"{where}.enable_tree_training=true needs {where}.mb_spec."
            f"max_tokens_per_mb a multiple of 128 (FlexAttention's block), got {size}"
        )


class SharesPrefixes:
    """``compute_logp``/``ppo_update`` of an FSDP PPO actor, tree-aware, and the
    training pass's token counts."""

    _counts: list[int] | None = None  # [rows, computed] while a training pass runs

    @property
    def tree(self) -> bool:
        return bool(getattr(self.config, "enable_tree_training", False))

    def compute_logp(self, data: list[dict[str, Any]], *args: Any, **kwargs: Any):
        if not self.tree:
            return super().compute_logp(data, *args, **kwargs)
        orders = [trie_order(d) for d in data]
        ordered = [take_rows(d, o) for d, o in zip(data, orders, strict=True)]
        results = super().compute_logp(ordered, *args, **kwargs)
        if results is None:
            return None
        return [
            r[torch.as_tensor(inverse(o), dtype=torch.long)]
            for r, o in zip(results, orders, strict=True)
        ]

    def ppo_update(self, data: list[dict[str, Any]], *args: Any, **kwargs: Any):
        self._counts = [0, 0]
        try:
            if self.tree:
                self._tree_update(data)
            else:
                super().ppo_update(data, *args, **kwargs)
            rows, computed = self._counts
        finally:
            self._counts = None
        stats_tracker.scalar(**{STAT_ROWS: float(rows), STAT_COMPUTED: float(computed)})

    def _tree_update(self, data: list[dict[str, Any]]) -> None:
        from areal.trainer.ppo.actor import PPOActor

        groups = [take_rows(d, trie_order(d)) for d in data]
        batch, _ = concat_batch(groups)
        n = self.config.ppo_n_minibatches
        one = getattr(self, "_one_minibatch", None)
        if one is None:  # AReaL's update, told the batch is one mini-batch
            one = PPOActor(dataclasses.replace(self.config, ppo_n_minibatches=1), self)
            self._one_minibatch = one
        if self.config.tree_minibatches == "dealt":
            cuts = dealt_minibatches(batch["attention_mask"].shape[0], n)
        elif self.config.tree_minibatches == "runs":
            cuts = dealt_runs(groups, n)
        else:
            cuts = contiguous_minibatches(batch, n)
        with stats_tracker.scope("ppo_actor"):
            for rows in cuts:
                one._ppo_update(take_rows(batch, rows))

    def _prepare_mb_list(self, input_: dict[str, Any]) -> Any:
        mb_list = super()._prepare_mb_list(input_)
        # ref: is AReaL's config, without the field: its tries go to the block
        if self.tree and getattr(self.config, "tree_padding", "block") == "block":
            pad_to_block(mb_list, self._block_align())
            logger.info(  # AReaL's line above gives the sizes before the cut
                f"Tries padded to the block (actor.tree_padding=block): "
                f"{mb_list.padded_to_lengths}"
            )
        if self._counts is not None:
            self._counts[0] += int(input_["attention_mask"].sum())
            self._counts[1] += mb_tokens(mb_list)
        return mb_list

    def _block_align(self) -> int:
        """The tries' alignment as AReaL checks it: FlexAttention's block, with
        tensor and sequence parallelism their lcm."""
        from areal.models.tree_attn.constants import BLOCK_SIZE

        helper = self.parallel_helper
        return math.lcm(BLOCK_SIZE, helper.tp_size * helper.sp_size)

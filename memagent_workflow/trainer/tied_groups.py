"""Groups whose rewards all tie: counted every step, optionally kept out of the actor.

A GRPO group whose episodes all earn the same reward gets an advantage of
exactly 0 on every row (`advantage.group_advantages`), so its rows add nothing
to the policy gradient; they still cost the reference, proximal and training
passes. The workflow marks such rows (``rows.TIED_KEY``, one flag per row, like
``question_index``); `drop_tied_groups` takes a step's batch (one trajectory
dict per group, local tensors or the single controller's remote ones) and, when
asked to, keeps the tied groups out of it. Either way it records, under the
trainer's stats, how many groups tied and how many rows and tokens they hold.
`SkipsTiedGroups` applies it to the batch the actor (or its controller) prepares,
with ``memagent.skip_tied_groups`` as the trainer gave it.

A step keeps at least ``min_groups`` groups (the cheapest tied ones when too few
groups carry a signal): AReaL's passes need a non-empty batch on every
data-parallel rank, and the step must still update (a zero policy gradient;
Adam's momentum and the KL term act as they would have) and advance the version.
Skipping them departs from the paper's objective; ``false`` (the default)
keeps it (docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from areal.utils import stats_tracker
from areal.utils.environ import is_single_controller

from memagent_workflow.rows import TIED_KEY

# Names of the per-step counts in the exported stats (and steps.jsonl).
STAT_GROUPS = "memagent/groups"
STAT_TIED = "memagent/tied_groups"
STAT_ROWS_TIED = "memagent/rows_tied"
STAT_ROWS_SKIPPED = "memagent/rows_skipped"
STAT_TOKENS = "memagent/tokens"
STAT_TOKENS_SKIPPED = "memagent/tokens_skipped"


def _localized(values: list[Any]) -> list[Any]:
    """Local tensors; the single controller's remote ones fetched at once."""
    from areal.infra.rpc.rtensor import RTensor

    return RTensor.localize(values)


def tied_marks(batch: list[dict[str, Any]]) -> list[bool]:
    """Whether each group's trajectory dict is marked tied (no mark: not tied)."""
    flags = _localized([g.get(TIED_KEY) for g in batch])
    return [f is not None and bool(torch.as_tensor(f).reshape(-1)[0]) for f in flags]


def n_rows(group: dict[str, Any]) -> int:
    """Rows of a group (read from the shape: no fetch of a remote tensor)."""
    return int(group["attention_mask"].shape[0])


def n_tokens(groups: list[dict[str, Any]]) -> list[int]:
    """Tokens of each group (prompts and outputs: what every pass processes)."""
    masks = _localized([g["attention_mask"] for g in groups])
    return [int(torch.as_tensor(m).sum()) for m in masks]


@dataclass
class TiedSplit:
    """A step's batch split into what the actor trains and what it skips."""

    kept: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    counts: dict[str, float]  # the step's counts, by stat name

    def record(self) -> None:
        """Record the step's counts under the trainer's stats."""
        stats_tracker.scalar(**self.counts)


def split_tied(
    batch: list[dict[str, Any]], skip: bool, min_groups: int = 1
) -> TiedSplit:
    """Split ``batch``: with ``skip``, tied groups leave it, except that at least
    ``min_groups`` groups stay (the tied ones with the fewest tokens first)."""
    flags = tied_marks(batch)
    rows = [n_rows(g) for g in batch]
    tokens = n_tokens(batch)
    keep = [not (skip and f) for f in flags]
    short = min(min_groups, len(batch)) - sum(keep)
    if short > 0:  # too few untied groups: keep the cheapest tied ones too
        cheapest = sorted(
            (i for i, k in enumerate(keep) if not k), key=tokens.__getitem__
        )
        for i in cheapest[:short]:
            keep[i] = True

    def total(values: list[int], where: list[bool]) -> float:
        return float(sum(v for v, w in zip(values, where, strict=True) if w))

    skipped = [not k for k in keep]
    return TiedSplit(
        kept=[g for g, k in zip(batch, keep, strict=True) if k],
        skipped=[g for g, s in zip(batch, skipped, strict=True) if s],
        counts={
            STAT_GROUPS: float(len(batch)),
            STAT_TIED: float(sum(flags)),
            STAT_ROWS_TIED: total(rows, flags),
            STAT_ROWS_SKIPPED: total(rows, skipped),
            STAT_TOKENS: float(sum(tokens)),
            STAT_TOKENS_SKIPPED: total(tokens, skipped),
        },
    )


def drop_tied_groups(
    batch: list[dict[str, Any]],
    skip: bool,
    min_groups: int = 1,
    release: Callable[[list[dict[str, Any]]], None] | None = None,
) -> list[dict[str, Any]]:
    """The batch the actor's passes get: ``batch`` without its tied groups when
    ``skip`` (see `split_tied`); the counts are recorded either way.
    ``release`` frees the skipped groups (the single controller's stored shards,
    which AReaL's own end-of-step clean-up no longer sees)."""
    split = split_tied(batch, skip, min_groups)
    split.record()
    if split.skipped and release is not None:
        release(split.skipped)
    return split.kept


class SkipsTiedGroups:
    """``prepare_batch`` for the actor and its controller: the batch it returns
    leaves out tied groups when ``skip_tied_groups``, and the step's counts are
    recorded either way. The trainer gives the value (``memagent.skip_tied_groups``)
    when it builds the actor (`trainer.actor`). In the bases it comes before
    `MarksTrainedQuestions` (the ledger counts every question the step rolled
    out, tied ones included) and AReaL's class."""

    skip_tied_groups: bool = False

    def prepare_batch(self, dataloader: Any, *args: Any, **kwargs: Any) -> Any:
        batch = super().prepare_batch(dataloader, *args, **kwargs)
        if not is_single_controller():  # this rank's share; keep one group
            return drop_tied_groups(batch, self.skip_tied_groups)
        # The controller's batch is split over the data-parallel ranks.
        return drop_tied_groups(
            batch,
            self.skip_tied_groups,
            min_groups=self.parallel_strategy.dp_size,
            release=self.clear_batches,
        )


def step_counts(stats: dict[str, Any]) -> dict[str, int | None]:
    """The step line's fields for tied groups, from the exported stats."""

    def count(key: str) -> int | None:
        return None if key not in stats else round(stats[key])

    return {
        "groups": count(STAT_GROUPS),
        "tied_groups": count(STAT_TIED),
        "rows_tied": count(STAT_ROWS_TIED),
        "rows_skipped": count(STAT_ROWS_SKIPPED),
        "tokens": count(STAT_TOKENS),
        "tokens_skipped": count(STAT_TOKENS_SKIPPED),
    }

"""The question ledgers of several data-parallel ranks kept right after AReaL
moves groups between them.

Under AReaL's SPMD launcher every data-parallel rank hands out its own shard of
the questions, rolls them out, and then AReaL pools the finished groups of all
ranks and deals them out again by length (`areal.infra.dist_rollout`,
``redistribute_trajectories``). A rank therefore trains questions another rank
handed out. Each rank's ledger must settle what *it* handed out, whichever rank
trained it: the ranks gather the step's trained questions and their ledgers'
claims, and every rank settles its share of the same assignment
(`assign_owners`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch.distributed as dist
from areal.utils.environ import is_single_controller

from memagent_workflow.recovery.ledger import QuestionLedger, assign_owners


def mark_trained_across_ranks(
    ledger: QuestionLedger, local_indices: Sequence[int], group: Any = None
) -> list[int | None]:
    """Settle the questions trained by every rank of ``group`` in each rank's
    ledger (a collective: every rank of ``group`` calls it once per step).

    Returns the pass of each question of the whole step (all ranks, rank order).
    """
    local = [int(i) for i in local_indices]
    if not dist.is_initialized() or dist.get_world_size(group) == 1:
        return ledger.mark_trained(local)
    gathered: list[Any] = [None] * dist.get_world_size(group)
    dist.all_gather_object(gathered, (local, ledger.claims()), group=group)
    indices = [i for trained, _ in gathered for i in trained]
    owners = assign_owners(indices, [claims for _, claims in gathered])
    return ledger.mark_trained(indices, owners, rank=dist.get_rank(group))


def mark_step(
    ledger: QuestionLedger, local_indices: Sequence[int], train_engine: Any
) -> None:
    """What a step trained, told to the ledger of this process.

    Single controller: one ledger sees the whole batch. SPMD: the data-parallel
    heads (the ranks whose ledgers hand out questions) settle together; the
    other ranks of a model-parallel group hold a copy of their head's batch and
    a ledger that never hands anything out.
    """
    if is_single_controller() or not dist.is_initialized():
        ledger.mark_trained(local_indices)
    elif train_engine.is_data_parallel_head():
        mark_trained_across_ranks(
            ledger, local_indices, train_engine.data_parallel_group
        )

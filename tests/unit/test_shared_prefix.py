"""Rows sharing a prefix meet in one trie: measured against AReaL's own packing.

AReaL's tree packing (``_greedy_build_tries``) is first fit in batch order, and
its PPO mini-batch split is first fit decreasing by length; the workflow emits a
group's rows episode by episode. These tests measure what that does to a group's
rows of one turn, and that `trie_order` / `contiguous_minibatches` keep them
together (the failing-first case: the default order scatters them).
"""

from __future__ import annotations

import torch
from areal.api.cli_args import MicroBatchSpec
from areal.models.tree_attn.tree import _greedy_build_tries
from areal.utils.data import split_padded_tensor_dict_into_mb_list

from bench.tree_rows import Shape, group_batch
from memagent_workflow.rows import trie_tokens
from memagent_workflow.trainer.shared_prefix import (
    contiguous_minibatches,
    dealt_minibatches,
    dealt_runs,
    inverse,
    row_tokens,
    take_rows,
    trie_order,
)

SHAPE = Shape(group=4, turns=3, instruction=12, chunk=40, memory=10, answer=6)
ROWS_PER_EPISODE = SHAPE.turns + 1


def turn_of(row: int) -> int:
    return row % ROWS_PER_EPISODE


def packed_tokens(data: dict, order: list[int], budget: int) -> int:
    """Tokens of the tries AReaL's first fit builds from the rows in ``order``."""
    _, tokens = _greedy_build_tries(take_rows(data, order), budget)
    return sum(tokens)


def per_turn_tries(data: dict) -> tuple[int, int]:
    """The ideal (each turn of the group one trie: its tokens) and the budget
    that holds the largest such trie."""
    rows = row_tokens(data)
    turns = [trie_tokens(rows[t::ROWS_PER_EPISODE]) for t in range(ROWS_PER_EPISODE)]
    return sum(turns), max(turns)


def test_first_fit_in_the_workflows_order_misses_the_turns_sharing():
    data = group_batch(SHAPE, "section_first")
    ideal, budget = per_turn_tries(data)
    workflow = packed_tokens(data, list(range(len(row_tokens(data)))), budget)
    assert workflow > 1.4 * ideal, (workflow, ideal)  # measured: 696 vs 432


def test_first_fit_in_trie_order_gets_near_each_turn_as_one_trie():
    for order in ("section_first", "memory_first"):
        data = group_batch(SHAPE, order)
        ideal, budget = per_turn_tries(data)
        ours = packed_tokens(data, trie_order(data), budget)
        workflow = packed_tokens(data, list(range(len(row_tokens(data)))), budget)
        # a turn's first rows may fill the previous trie's leftover room: one
        # more copy of its prefix, no more
        assert ours <= 1.15 * ideal, (order, ours, ideal)
        assert ours <= workflow, (order, ours, workflow)


def test_arealss_minibatch_split_scatters_a_turn_and_ours_does_not():
    data = group_batch(SHAPE, "section_first")
    theirs = split_padded_tensor_dict_into_mb_list(data, MicroBatchSpec(n_mbs=2))
    spread, start = {}, 0
    for mb, part in enumerate(theirs.mbs):
        n = part["attention_mask"].shape[0]
        for r in theirs.forward_indices[start : start + n]:
            spread.setdefault(turn_of(r), set()).add(mb)
        start += n
    assert any(len(s) > 1 for s in spread.values()), spread  # measured: scattered

    order = trie_order(data)
    ours = contiguous_minibatches(take_rows(data, order), 2)
    assert sorted(i for mb in ours for i in mb) == list(range(len(order)))
    spread = {}
    for mb, rows in enumerate(ours):
        for r in rows:
            spread.setdefault(turn_of(order[r]), set()).add(mb)
    assert all(len(s) == 1 for s in spread.values()), spread


def test_dealt_minibatches_put_every_turn_of_a_group_in_each_and_keep_its_prefix():
    # actor.tree_minibatches: dealt: each mini-batch holds part
    # of every turn, as AReaL's split spreads a group, and what it holds of a turn
    # still shares the turn's prefix: one copy per mini-batch, no more.
    data = group_batch(SHAPE, "section_first")
    order = trie_order(data)
    ordered = take_rows(data, order)
    dealt = dealt_minibatches(len(order), 2)
    assert sorted(i for mb in dealt for i in mb) == list(range(len(order)))
    for rows in dealt:
        assert {turn_of(order[r]) for r in rows} == set(range(ROWS_PER_EPISODE))
    whole = trie_tokens(row_tokens(ordered))
    parts = sum(trie_tokens(row_tokens(take_rows(ordered, rows))) for rows in dealt)
    prefix = SHAPE.instruction + SHAPE.chunk  # a memory turn's shared prompt
    assert whole < parts <= whole + 2 * SHAPE.turns * prefix
    assert dealt_minibatches(3, 5) == [[0], [1], [2]]  # never an empty one


def test_trie_order_is_a_permutation_that_take_rows_and_inverse_undo():
    data = group_batch(SHAPE, "memory_first", seed=3)
    order = trie_order(data)
    assert sorted(order) == list(range(len(order)))
    back = take_rows(take_rows(data, order), inverse(order))
    for key, value in data.items():
        assert torch.equal(back[key], value), key


def test_trie_tokens_count_shared_prefixes_once():
    assert trie_tokens([[1, 2, 3], [1, 2, 4], [5]]) == 5
    assert trie_tokens([[1, 2], [1, 2]]) == 2


def test_a_groups_shared_prompt_tokens_are_what_one_trie_saves():
    import numpy as np

    from memagent_workflow.rows import Turn, shared_prompt_tokens

    def turn(prompt):
        return Turn(
            prompt_ids=np.asarray(prompt, dtype=np.int32),
            output_ids=np.asarray([9], dtype=np.int32),
            logprobs=np.zeros(1, np.float32),
            versions=np.zeros(1, np.int32),
            stop_reason="stop",
            latency=0.0,
        )

    turns = [turn([1, 2, 3, 4]), turn([1, 2, 3, 5]), turn([1, 7])]
    assert shared_prompt_tokens(turns) == (10, 3 + 1)  # [1,2,3] again, [1] again


def test_dealt_runs_put_every_group_in_each_minibatch_and_keep_a_turn_whole():
    # actor.tree_minibatches: runs: each group cut where its rows share least
    # (between turns, in the section-first order) and its runs dealt, so every
    # group is in every mini-batch as with dealt rows, while a turn's prefix is
    # still computed once (dealt rows compute it once per mini-batch).
    groups, orders = [], []
    for seed in range(3):
        data = group_batch(SHAPE, "section_first", seed=seed)
        orders.append(trie_order(data))
        groups.append(take_rows(data, orders[-1]))
    size = len(orders[0])
    runs = dealt_runs(groups, 2)
    assert sorted(i for mb in runs for i in mb) == list(range(3 * size))
    for rows in runs:
        assert {r // size for r in rows} == {0, 1, 2}  # every group in each
    for g, order in enumerate(orders):
        turns: dict[int, set[int]] = {}
        for mb, rows in enumerate(runs):
            for r in rows:
                turn = turn_of(order[r % size])
                if r // size == g and turn < SHAPE.turns:  # final rows share no section
                    turns.setdefault(turn, set()).add(mb)
        assert all(len(s) == 1 for s in turns.values()), (g, turns)

    def tokens(cuts: list[list[int]]) -> int:  # each group's part of each cut a trie
        total = 0
        for rows in cuts:
            for g, group in enumerate(groups):
                part = [r % size for r in rows if r // size == g]
                total += trie_tokens(row_tokens(take_rows(group, part))) if part else 0
        return total

    whole = sum(trie_tokens(row_tokens(d)) for d in groups)
    dealt = [
        [g * size + r for g in range(3) for r in rows]
        for rows in dealt_minibatches(size, 2)
    ]
    # runs: the instruction again per group and mini-batch, no section again
    assert tokens(runs) <= whole + 3 * 2 * SHAPE.instruction < tokens(dealt)
    assert dealt_runs(groups[:1], 1) == [list(range(size))]

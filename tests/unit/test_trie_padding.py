"""``actor.tree_padding: block``: AReaL's tries cut to their tokens rounded up to
FlexAttention's block, the trie itself untouched (the same numbers through an
actor: tests/integration/test_tree_training.py)."""

from __future__ import annotations

import copy

import pytest
import torch
from areal.api.cli_args import MicroBatchSpec
from areal.models.tree_attn.tree import (
    build_attention_mask_from_trie,
    build_packed_tree_batch,
)

from bench.tree_rows import Shape, group_batch
from memagent_workflow.actor_config import MemAgentActorConfig
from memagent_workflow.trainer.shared_prefix import take_rows, trie_order
from memagent_workflow.trainer.trie_padding import block_size, pad_to_block

MAX = 1024
SHAPE = Shape(group=4, turns=3, instruction=12, chunk=40, memory=10, answer=6)


def tries(max_tokens: int = MAX):
    data = group_batch(SHAPE, "section_first")
    data = take_rows(data, trie_order(data))
    return build_packed_tree_batch(
        data, MicroBatchSpec(max_tokens_per_mb=max_tokens), pad_to_maximum=True
    )


def test_block_size_rounds_up_and_keeps_a_block_for_a_dummy_trie():
    assert [block_size(n, 128) for n in (0, 1, 128, 129, 256)] == [
        128, 128, 128, 256, 256,
    ]  # fmt: skip


@pytest.mark.parametrize("max_tokens", [MAX, 256])
def test_each_trie_is_cut_to_its_tokens_rounded_to_the_block(max_tokens):
    mb_list = tries(max_tokens)
    before = copy.deepcopy(mb_list.mbs)
    assert set(mb_list.padded_to_lengths) == {max_tokens}  # AReaL pads to the maximum
    pad_to_block(mb_list, 128)

    for i, (mb, old) in enumerate(zip(mb_list.mbs, before, strict=True)):
        held, size = mb_list.group_lens[i], mb_list.padded_to_lengths[i]
        assert size % 128 == 0 and held <= size < held + 128
        assert mb_list.padding_lengths[i] == size - held
        assert mb_list.padded_mbs[i] is mb  # what the engine's forward reads
        for key in ("input_ids", "position_ids"):
            assert mb[key].shape == (1, size)
            assert torch.equal(mb[key], old[key][..., :size])
        # what the cut drops is padding only: token 0, no trie position
        assert not old["input_ids"][0, held:].any()
        # the attention mask built at the cut size is the top corner of AReaL's
        trie = mb["trie_node"]
        small = build_attention_mask_from_trie(trie, size, torch.device("cpu"))
        full = build_attention_mask_from_trie(trie, max_tokens, torch.device("cpu"))
        assert torch.equal(small, full[:size, :size])
        assert not full[:, size:].any()
    if max_tokens == MAX:
        assert sum(mb_list.padded_to_lengths) < MAX * len(mb_list.mbs)


def test_a_list_that_disagrees_with_its_tensors_is_refused():
    mb_list = tries()
    mb_list.padded_to_lengths[0] = 2048
    with pytest.raises(ValueError, match="trie 0: input_ids holds 1024 positions"):
        pad_to_block(mb_list, 128)


def test_the_field_takes_block_or_maximum():
    assert MemAgentActorConfig().tree_padding == "block"
    assert MemAgentActorConfig(tree_padding="maximum").tree_padding == "maximum"
    with pytest.raises(ValueError, match="actor.tree_padding must be 'block' or"):
        MemAgentActorConfig(tree_padding="none")


def test_the_trainer_refuses_what_areal_would_refuse_at_its_first_batch():
    from areal.api.cli_args import PPOActorConfig

    from memagent_workflow.trainer.tree_actor import check_tree_config

    good = MemAgentActorConfig(
        enable_tree_training=True,
        pad_to_maximum=True,
        mb_spec=MicroBatchSpec(max_tokens_per_mb=1024),
    )
    check_tree_config(good)
    check_tree_config(None, "ref")  # no reference model
    with pytest.raises(ValueError, match="actor.enable_tree_training=true needs "
                       "actor.pad_to_maximum=true"):  # fmt: skip
        check_tree_config(MemAgentActorConfig(enable_tree_training=True,
                                              mb_spec=good.mb_spec))  # fmt: skip
    ref = PPOActorConfig(
        enable_tree_training=True,
        pad_to_maximum=True,
        mb_spec=MicroBatchSpec(max_tokens_per_mb=1000),
    )
    with pytest.raises(ValueError, match="ref.mb_spec.max_tokens_per_mb a multiple "
                       "of 128 .*got 1000"):  # fmt: skip
        check_tree_config(ref, "ref")

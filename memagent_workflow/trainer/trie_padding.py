"""Tries padded to FlexAttention's block instead of the micro-batch's maximum.

AReaL's ``build_packed_tree_batch`` pads every trie to ``max_tokens_per_mb``
(it refuses ``pad_to_maximum: false``), and the padded positions are computed:
embeddings, MLP, the LM head. The block mask needs only a multiple of its block
(``BLOCK_SIZE``, with tensor/sequence parallelism the lcm), and AReaL compiles
``flex_attention`` with dynamic shapes, so a trie needs no more. At the paper's
shapes a 16K trie holds two 7.2K rows: the padding to the maximum (12%) takes
back more than the paper's prompt order shares (docs/tree-training.md).

With ``actor.tree_padding: block`` the actor cuts each trie's padded tensors
(``input_ids``, ``position_ids``: the trie's tokens first, padding after) down
to its tokens rounded up to the block. The log-probs are gathered by trie node
(``gather_packed_tree_logprobs``), never through the padding, so the numbers
are the same (tests/integration/test_tree_training.py).
"""

from __future__ import annotations

import math
from typing import Any

PADDED_KEYS = ("input_ids", "position_ids")  # [1, padded]; other keys are packed


def block_size(tokens: int, align: int) -> int:
    """``tokens`` rounded up to ``align``; an empty (dummy) trie keeps one block."""
    return max(align, math.ceil(tokens / align) * align)


def pad_to_block(mb_list: Any, align: int) -> None:
    """Cut each trie of AReaL's ``MicroBatchList`` (in place) to
    `block_size` of the tokens it holds."""
    for i, mb in enumerate(mb_list.mbs):
        size = block_size(mb_list.group_lens[i], align)
        padded = mb_list.padded_to_lengths[i]
        if size >= padded:
            continue
        for key in PADDED_KEYS:
            if mb[key].shape[-1] != padded:
                raise ValueError(
                    f"trie {i}: {key} holds {mb[key].shape[-1]} positions, "
                    f"AReaL's list says {padded}"
                )
            mb[key] = mb[key][..., :size]
        mb_list.padding_lengths[i] = size - mb_list.group_lens[i]
        mb_list.padded_to_lengths[i] = size

"""Pack-aware SDPA for AReaL's FSDP actor on CPU.

AReaL 1.0.4's FSDP engine packs several sequences into one micro-batch row and
passes their boundaries as ``cu_seq_lens_q/k`` with no attention mask; on GPU,
flash-attention's varlen kernels honour those boundaries. Plain SDPA (the only
choice on CPU) does not: every packed sequence would attend to the sequences
before it, and the recomputed logprobs of all but the first would be wrong.
`install_packed_sdpa` makes the ``sdpa`` attention of transformers build the
block-diagonal causal mask from ``cu_seq_lens_q`` in that case, and leaves every
other call unchanged. Only the CPU paths (stand-in runs, tests) install it.

With ``actor.enable_tree_training`` AReaL's engine replaces transformers'
``_flash_attention_forward`` with its tree attention (FlexAttention with the
trie's block mask; ``areal/models/tree_attn/module_fsdp.py``) and passes the
mask as ``tree_block_mask``: the GPU's ``flash_attention_2`` reaches it there.
``sdpa`` (CPU, no flash-attn) hands such calls to transformers'
``flash_attention_forward``, which calls AReaL's replacement: the attention
computed is AReaL's, not this module's.
"""

from __future__ import annotations

import torch
from transformers import AttentionInterface
from transformers.integrations import flash_attention
from transformers.integrations.sdpa_attention import sdpa_attention_forward


def packed_causal_mask(cu_seqlens: torch.Tensor, length: int) -> torch.Tensor:
    """``[1, 1, length, length]`` bool mask: causal within each packed sequence."""
    lengths = (cu_seqlens[1:] - cu_seqlens[:-1]).to(torch.long).cpu()
    segment = torch.repeat_interleave(torch.arange(len(lengths)), lengths)
    if len(segment) < length:  # trailing padding: a segment of its own
        tail = torch.full((length - len(segment),), len(lengths))
        segment = torch.cat([segment, tail])
    segment = segment[:length]
    pos = torch.arange(length)
    mask = (segment[:, None] == segment[None, :]) & (pos[:, None] >= pos[None, :])
    return mask[None, None]


def packed_sdpa_forward(module, query, key, value, attention_mask, **kwargs):
    if "tree_block_mask" in kwargs:  # AReaL's tree training: its attention
        return flash_attention.flash_attention_forward(
            module, query, key, value, attention_mask, **kwargs
        )
    cu = kwargs.get("cu_seq_lens_q")
    packed = (
        cu is not None
        and attention_mask is None
        and query.shape[0] == 1
        and query.shape[2] == key.shape[2]
        and len(cu) > 2
    )
    if packed:
        attention_mask = packed_causal_mask(cu, query.shape[2]).to(query.device)
        kwargs["is_causal"] = False
    return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)


def install_packed_sdpa() -> None:
    """Route transformers' ``sdpa`` attention through `packed_sdpa_forward`."""
    AttentionInterface.register("sdpa", packed_sdpa_forward)

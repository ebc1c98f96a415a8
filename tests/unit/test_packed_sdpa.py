"""Pack-aware SDPA (standin/packed_sdpa.py): no attention across packed sequences."""

import pytest
import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from standin.packed_sdpa import packed_causal_mask, packed_sdpa_forward

LENGTHS = [3, 1, 4, 2]  # one sequence of a single token


def segments(lengths, total):
    """Segment of each position, by hand; trailing padding gets -1."""
    seg = [s for s, n in enumerate(lengths) for _ in range(n)]
    return seg + [-1] * (total - len(seg))


def cu(lengths):
    return torch.tensor([0] + [sum(lengths[: i + 1]) for i in range(len(lengths))])


@pytest.mark.parametrize("padding", [0, 3])
def test_mask_is_causal_within_each_sequence_and_closed_between(padding):
    total = sum(LENGTHS) + padding
    mask = packed_causal_mask(cu(LENGTHS).to(torch.int32), total)
    assert mask.shape == (1, 1, total, total) and mask.dtype == torch.bool
    seg = segments(LENGTHS, total)
    real = sum(LENGTHS)
    for i in range(real):
        for j in range(total):
            allowed = seg[i] == seg[j] and j <= i
            assert bool(mask[0, 0, i, j]) == allowed, (i, j)
    for i in range(real, total):  # padding sees no real token, and is never empty
        assert not mask[0, 0, i, :real].any() and mask[0, 0, i, i]


class Attention(torch.nn.Module):
    is_causal = True


def qkv(total, seed=0, heads=2, dim=8):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, heads, total, dim, generator=g) for _ in range(3)]


@pytest.mark.parametrize("padding", [0, 2])
def test_a_pack_attends_like_its_sequences_one_by_one(padding):
    total = sum(LENGTHS) + padding
    q, k, v = qkv(total)
    packed, _ = packed_sdpa_forward(
        Attention(), q, k, v, None, cu_seq_lens_q=cu(LENGTHS), cu_seq_lens_k=cu(LENGTHS)
    )
    assert packed.shape == (1, total, 2, 8)
    start = 0
    for n in LENGTHS:
        sl = slice(start, start + n)
        alone, _ = sdpa_attention_forward(
            Attention(), q[:, :, sl], k[:, :, sl], v[:, :, sl], None
        )
        assert torch.allclose(packed[:, sl], alone, atol=1e-6), (start, n)
        start += n
    assert torch.isfinite(packed).all()


def test_calls_that_are_not_packs_are_left_alone():
    q, k, v = qkv(6, seed=1)
    plain, _ = sdpa_attention_forward(Attention(), q, k, v, None)
    single = cu([6])  # one sequence: ordinary causal attention
    for kwargs in ({}, {"cu_seq_lens_q": single, "cu_seq_lens_k": single}):
        out, _ = packed_sdpa_forward(Attention(), q, k, v, None, **kwargs)
        assert torch.equal(out, plain)
    # an explicit mask from the caller wins
    mask = torch.ones(1, 1, 6, 6, dtype=torch.bool)
    out, _ = packed_sdpa_forward(
        Attention(), q, k, v, mask, cu_seq_lens_q=cu([3, 3]), cu_seq_lens_k=cu([3, 3])
    )
    assert torch.equal(out, sdpa_attention_forward(Attention(), q, k, v, mask)[0])

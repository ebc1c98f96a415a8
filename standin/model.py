"""Model side of the CPU stand-in server: loading, batched KV cache, digest.

Test/CPU use only; see ``local_engine`` for the generation loop.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import torch
from transformers import (
    AttentionInterface,
    AttentionMaskInterface,
    AutoModelForCausalLM,
    DynamicCache,
)
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import sdpa_mask

from standin.protocol import GenRequest

__all__ = [
    "GROUPED_ATTN",
    "KVBatch",
    "load_model",
    "weights_checksum",
    "weights_digest",
]


def weights_digest(model: torch.nn.Module) -> str:
    """sha256 over all parameters (name-sorted; name, shape and float32 bytes)."""
    h = hashlib.sha256()
    for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
        t = p.detach().to(torch.float32).contiguous().cpu()
        h.update(f"{name}:{tuple(t.shape)};".encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()


def weights_checksum(model: torch.nn.Module) -> float:
    """Sum of all parameters in float64 (a cheap "did the weights change" probe)."""
    return float(sum(p.detach().double().sum() for p in model.parameters()))


GROUPED_ATTN = "memagent_grouped_sdpa"


def grouped_sdpa_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """SDPA, except that one-token decode steps with GQA attend per KV group.

    HF's sdpa path copies K/V once per query head (``repeat_kv``) whenever a
    padding mask is present; with a long batched cache that copy dominated
    the step time. Here the query heads of a group share their K/V view.
    """
    b, h, q_len, d = query.shape
    h_kv = key.shape[1]
    if q_len != 1 or h == h_kv or dropout:
        return sdpa_attention_forward(
            module,
            query,
            key,
            value,
            attention_mask,
            dropout,
            scaling,
            is_causal,
            **kwargs,
        )
    scale = scaling if scaling is not None else d**-0.5
    q = query.reshape(b, h_kv, h // h_kv, d)
    scores = torch.matmul(q, key.transpose(-1, -2)) * scale  # [B, Hkv, G, T]
    if attention_mask is not None:
        m = attention_mask[:, :, -1:, : key.shape[2]]  # [B, 1, 1, T]
        if m.dtype == torch.bool:
            scores = scores.masked_fill(~m, float("-inf"))
        else:
            scores = scores + m
    probs = torch.softmax(scores.float(), dim=-1).to(value.dtype)
    out = torch.matmul(probs, value).reshape(b, h, 1, d)
    return out.transpose(1, 2).contiguous(), None


def register_grouped_attention() -> None:
    """Make ``GROUPED_ATTN`` an ``attn_implementation`` transformers knows.

    Called by ``load_model`` when a run asks for it, not on import: importing
    this module changes no global registry. Registering again is harmless.
    """
    AttentionInterface.register(GROUPED_ATTN, grouped_sdpa_forward)
    AttentionMaskInterface.register(GROUPED_ATTN, sdpa_mask)


def load_model(path: str | Path, attn: str = GROUPED_ATTN) -> torch.nn.Module:
    """Load an HF causal LM in float32 on CPU, in eval mode."""
    if attn == GROUPED_ATTN:
        register_grouped_attention()
    model = AutoModelForCausalLM.from_pretrained(
        str(path), dtype=torch.float32, attn_implementation=attn
    )
    model.eval().requires_grad_(False)
    return model


class KVBatch:
    """Running requests sharing one left-padded KV cache."""

    def __init__(self) -> None:
        self.rows: list[GenRequest] = []
        self.pad: list[int] = []
        self.cache: DynamicCache | None = None
        self.mask: torch.Tensor | None = None  # [B, T] 1 = real token

    @property
    def length(self) -> int:
        return 0 if self.mask is None else self.mask.shape[1]

    def _layers(self) -> list[Any]:
        assert self.cache is not None
        return self.cache.layers

    def add(self, req: GenRequest, cache: DynamicCache) -> None:
        """Join a prefilled request (its cache covers its whole prompt)."""
        n = cache.get_seq_length()
        if self.cache is None:
            self.rows, self.pad, self.cache = [req], [0], cache
            self.mask = torch.ones(1, n, dtype=torch.long)
            return
        grow_batch, grow_new = max(0, n - self.length), max(0, self.length - n)
        for mine, new in zip(self._layers(), cache.layers, strict=True):
            for attr in ("keys", "values"):
                a = _left_pad(getattr(mine, attr), grow_batch)
                b = _left_pad(getattr(new, attr), grow_new)
                setattr(mine, attr, torch.cat([a, b], dim=0))
        assert self.mask is not None
        m_new = _left_pad(torch.ones(1, n, dtype=torch.long), grow_new)
        self.mask = torch.cat([_left_pad(self.mask, grow_batch), m_new], dim=0)
        self.pad = [p + grow_batch for p in self.pad] + [grow_new]
        self.rows.append(req)

    def keep(self, idx: list[int]) -> None:
        """Keep only rows ``idx`` and trim padding columns that all rows share."""
        if not idx:
            self.__init__()
            return
        if len(idx) == len(self.rows):
            return
        cut = min(self.pad[i] for i in idx)
        sel = torch.tensor(idx, dtype=torch.long)
        for layer in self._layers():
            layer.keys = layer.keys[sel, :, cut:].contiguous()
            layer.values = layer.values[sel, :, cut:].contiguous()
        assert self.mask is not None
        self.mask = self.mask[sel, cut:].contiguous()
        self.rows = [self.rows[i] for i in idx]
        self.pad = [self.pad[i] - cut for i in idx]


def _left_pad(x: torch.Tensor, n: int) -> torch.Tensor:
    """Left-pad the sequence dim (dim 2 for KV [B,H,T,D], dim 1 for masks)."""
    if n == 0:
        return x
    dim = 2 if x.dim() == 4 else 1
    shape = list(x.shape)
    shape[dim] = n
    return torch.cat([x.new_zeros(shape), x], dim=dim)

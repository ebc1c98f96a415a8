"""Tokenising long contexts: piecewise, off the event loop, into compact arrays.

A whole-string encode of a 3.5M-token document costs ~17 s of CPU and ~2 GB of
transient memory. Here the text is cut into ~64 KB pieces at places where the
cut provably does not change the tokens of the surrounding text, the pieces are
batch-encoded (the Rust tokenizer releases the GIL and uses every core), and the
ids are kept as one int32 array (4 bytes a token instead of ~36 for a list).
"""

from __future__ import annotations

import asyncio

import numpy as np

PIECE_CHARS = 64 * 1024
BATCH_PIECES = 16
_WINDOW = 256  # characters of context either side of a candidate cut
_SEARCH = 4096  # how far past the target a cut is searched for


def _encode_batch(tokenizer, texts: list[str]) -> list[list[int]]:
    # The Rust tokenizer's offset-free batch encode: the same ids for ~27% less
    # CPU than tokenizer(texts) (bench/results.md, benchmark 1).
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and hasattr(backend, "encode_batch_fast"):
        encodings = backend.encode_batch_fast(texts, add_special_tokens=False)
        return [e.ids for e in encodings]
    out = tokenizer(texts, add_special_tokens=False, return_attention_mask=False)
    return out["input_ids"]


def _cut_is_safe(tokenizer, text: str, cut: int) -> bool:
    """Whether splitting ``text`` at ``cut`` leaves the local tokens unchanged."""
    left = text[max(0, cut - _WINDOW) : cut]
    right = text[cut : cut + _WINDOW]
    whole, a, b = _encode_batch(tokenizer, [left + right, left, right])
    return whole == a + b


def _find_cut(tokenizer, text: str, target: int) -> int | None:
    """First safe cut at or after ``target``, preferring paragraph breaks."""
    end = min(len(text), target + _SEARCH)
    for sep in ("\n\n", "\n", " "):
        pos = text.find(sep, target, end)
        while pos != -1:
            cut = pos + len(sep)
            if cut < len(text) and _cut_is_safe(tokenizer, text, cut):
                return cut
            pos = text.find(sep, pos + 1, end)
    return None


def split_text(tokenizer, text: str, piece_chars: int = PIECE_CHARS) -> list[str]:
    """Pieces of ``text`` whose concatenated encodings equal the whole encoding."""
    pieces, start = [], 0
    while len(text) - start > piece_chars:
        cut = _find_cut(tokenizer, text, start + piece_chars)
        if cut is None:  # no safe cut nearby: try again further on
            cut = _find_cut(tokenizer, text, start + piece_chars + _SEARCH)
            if cut is None:
                break
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


def encode_context(tokenizer, text: str, piece_chars: int = PIECE_CHARS) -> np.ndarray:
    """Token ids of ``text`` (no special tokens) as an int32 array."""
    if not text:
        return np.zeros(0, dtype=np.int32)
    pieces = split_text(tokenizer, text, piece_chars)
    arrays = []
    for i in range(0, len(pieces), BATCH_PIECES):
        for ids in _encode_batch(tokenizer, pieces[i : i + BATCH_PIECES]):
            arrays.append(np.asarray(ids, dtype=np.int32))
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int32)


async def aencode_context(tokenizer, text: str) -> np.ndarray:
    """`encode_context` in a worker thread, so the event loop keeps serving turns."""
    return await asyncio.to_thread(encode_context, tokenizer, text)

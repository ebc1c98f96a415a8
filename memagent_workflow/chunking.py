"""Splitting a tokenised document into the chunks MemAgent reads one by one."""

from __future__ import annotations

import numpy as np


def centre_truncate(token_ids, budget: int):
    """Keep the first and last halves of ``budget`` tokens (head gets the odd one).

    Returns ``(kept_ids, n_dropped)``. Works on lists and numpy arrays.
    """
    n = len(token_ids)
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    if n <= budget:
        return token_ids, 0
    head = budget - budget // 2
    tail = budget // 2
    if isinstance(token_ids, np.ndarray):
        kept = np.concatenate([token_ids[:head], token_ids[n - tail :]])
    else:
        kept = list(token_ids[:head]) + list(token_ids[n - tail :])
    return kept, n - budget


def chunk_views(token_ids, chunk_tokens: int, max_chunks: int | None = None):
    """Chunks as slices of ``token_ids`` (no copies for numpy input).

    Returns ``(chunks, n_truncated)`` where ``n_truncated`` counts the tokens
    dropped from the middle to respect ``max_chunks``.
    """
    if chunk_tokens <= 0:
        raise ValueError(f"chunk_tokens must be positive, got {chunk_tokens}")
    if max_chunks is not None and max_chunks <= 0:
        raise ValueError(f"max_chunks must be positive or None, got {max_chunks}")
    n_truncated = 0
    if max_chunks is not None:
        token_ids, n_truncated = centre_truncate(token_ids, max_chunks * chunk_tokens)
    chunks = [
        token_ids[i : i + chunk_tokens] for i in range(0, len(token_ids), chunk_tokens)
    ]
    return chunks, n_truncated


def cut_refusal(n_tokens: int, chunk_tokens: int, max_chunks: int | None) -> str | None:
    """Why a document cannot be read whole under ``max_chunks``; None if it can.

    Evaluation never cuts a document (training does, by centre truncation).
    """
    needed = -(-n_tokens // chunk_tokens)
    if max_chunks is None or needed <= max_chunks:
        return None
    return (
        f"{n_tokens} context tokens need {needed} chunks of {chunk_tokens}, more "
        f"than memagent.max_chunks={max_chunks}; evaluation never cuts a document "
        "(set memagent.max_chunks=null, the original protocol)"
    )

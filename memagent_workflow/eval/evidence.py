"""Where a sample's evidence sits among its chunks, with the text around it.

The set says what the evidence is where it knows it: a sample's ``evidence``
texts (the needle sentence of the CPU needle sets and of RULER's needle tasks,
the asked chain of RULER's variable tracking, the gold documents of RULER's QA
or HotpotQA's supporting sentences where the source carries them, the
supporting sentences of a built RULER-HQA set). Where it does not (the
official RULER-HQA sets, RULER's frequent words, ``ask.py``), the gold
answer's own words are searched for instead, which also marks every other
sentence that shares them (a yes/no answer, a one-word code): such a trace
says "located by answer words", and the page and the split say so too.

Matching is on SQuAD-normalised words (the scores' normalisation) over the
decoded chunks, the end of the previous chunks carried along, so a text cut by
a chunk boundary counts for the chunk it ends in. Each marked chunk keeps an
excerpt (the text around its first match) for a person to judge. No AReaL
import here.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from memagent_workflow.reward.squad import normalize_answer

SET = "evidence"  # evidence_source of a trace: the set's evidence texts
ANSWER = "answer"  # evidence_source of a trace: located by the answer's words
EXCERPT_CHARS = 160  # characters kept on each side of a match
MAX_EXCERPTS = 32  # excerpts kept per sample (the first marked chunks)


def words(text: str) -> list[str]:
    """SQuAD-normalised words (as the scores compare answers)."""
    return normalize_answer(text).split()


_DROP = str.maketrans("", "", string.punctuation)  # SQuAD's punctuation
_ARTICLES = frozenset(("a", "an", "the"))


@lru_cache(maxsize=1 << 16)
def _norm(token: str) -> str:
    """``normalize_answer`` of one white-space-free token, fast for the usual
    letters-and-digits one."""
    t = token.lower().translate(_DROP)
    if t.isalnum():
        return "" if t in _ARTICLES else t
    return normalize_answer(token)


def _first_match(
    flat: list[str], wanted: list[list[str]], first: int
) -> tuple[int, int] | None:
    """(first, last) index in ``flat`` (a text's normalised words, "" where one
    normalises to nothing) of the earliest-ending match of any of ``wanted``
    that ends at or after word ``first``; None if none does."""
    keep = [i for i, w in enumerate(flat) if w]
    seq = [flat[i] for i in keep]
    by_first: dict[str, list[list[str]]] = {}
    for term in wanted:
        by_first.setdefault(term[0], []).append(term)
    best: tuple[int, int] | None = None
    for p in [p for p, w in enumerate(seq) if w in by_first]:
        if best is not None and keep[p] > best[1]:
            break  # every later match ends later
        for term in by_first[seq[p]]:
            last = keep[min(p + len(term), len(seq)) - 1]
            if seq[p : p + len(term)] == term and last >= first:
                if best is None or last < best[1]:
                    best = (keep[p], last)
    return best


def _chunk_start(text: str, head: str) -> int:
    """Index in ``text.split()`` of the first word of the chunk that follows
    the carried ``head`` (a word cut by the boundary is the chunk's)."""
    n = len(head.split())
    cut = head[-1:].strip() and text[len(head) : len(head) + 1].strip()
    return n - 1 if n and cut else n


def _excerpt(
    text: str, tokens: list[str], i: int, j: int, first: int, chunk: int
) -> dict[str, Any]:
    """Words ``i..j`` of ``text`` (the carried tail, then the chunk from word
    ``first``) with the chunk's own text around them."""
    offsets, pos = [], 0
    for t in tokens[: max(j, first) + 1]:
        pos = text.find(t, pos)
        offsets.append(pos)
        pos += len(t)
    start, end = offsets[i], offsets[j] + len(tokens[j])
    begin = min(start, offsets[first]) if first < len(offsets) else start
    match = text[start:end]
    if len(match) > 2 * EXCERPT_CHARS:  # a whole document: its two ends
        match = f"{match[:EXCERPT_CHARS]} … {match[-EXCERPT_CHARS:]}"
    lo, hi = max(begin, start - EXCERPT_CHARS), min(len(text), end + EXCERPT_CHARS)
    return {
        "chunk": chunk,
        "before": ("…" if lo > begin else "") + text[lo:start],
        "match": match,
        "after": text[end:hi] + ("…" if hi < len(text) else ""),
    }


def locate(
    decode: Callable[[np.ndarray], str], chunks: list[np.ndarray], texts: list[str]
) -> tuple[list[int], list[dict[str, Any]]]:
    """(chunks holding any of ``texts``, an excerpt of the first match in each
    of the first ``MAX_EXCERPTS`` of them: ``{chunk, before, match, after}``)."""
    wanted = [w for w in map(words, texts) if w]
    if not wanted:
        return [], []
    carry = 2 * max(len(t) for t in texts) + 16  # tokens: a text cut by a boundary
    found: list[int] = []
    excerpts: list[dict[str, Any]] = []
    tail = np.zeros(0, dtype=np.int64)
    for k, chunk in enumerate(chunks):
        ids = np.concatenate([tail, chunk]) if len(tail) else chunk
        text = decode(ids)
        tokens = text.split()
        first = _chunk_start(text, decode(tail)) if len(tail) else 0
        hit = _first_match([_norm(t) for t in tokens], wanted, first)
        if hit is not None:
            found.append(k)
            if len(excerpts) < MAX_EXCERPTS:
                excerpts.append(_excerpt(text, tokens, *hit, first, k))
        tail = ids[-carry:]
    return found, excerpts


def sample_evidence(data: dict[str, Any], terms: list[str]) -> tuple[list[str], str]:
    """(texts to locate, evidence_source): the sample's ``evidence`` where the
    set gives it, else the gold ``terms`` (located by answer words)."""
    given = data.get("evidence") or []
    return (list(given), SET) if given else (list(terms), ANSWER)

"""Fitting a sample to a target length, counted in the evaluated model's tokens.

A sample's length is counted as RULER counts it: the question (the task's
template with its query), the context and the answer tokens RULER reserves
(``tokens_to_generate``). The haystack is never re-encoded per search step:
each haystack piece (sentence, line, document, word) is counted once, with the
separator that joins it to the next, prefix sums give the estimated length of
any prefix, and a search over them picks the size. The sample is then encoded
once (piecewise, see ``memagent_workflow/context.py``) to check the estimate;
where the two differ (tokens merging across a separator), the estimate is
rescaled and the search repeated, a few times at most.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from memagent_workflow.context import encode_batch, encode_context

#: A sample's length must lie in [(1 - TOLERANCE) * target, target].
TOLERANCE = 0.02
_AIM = 0.99  # the first search aims here, inside the band
_ROUNDS = 8


class FitError(ValueError):
    """A target length the task cannot be fitted to (too small, haystack short)."""


class TokenCounter:
    """Counts tokens of many short texts (batched, cached) and of whole contexts."""

    def __init__(self, tokenizer: Any, batch: int = 512):
        self.tokenizer = tokenizer
        self.batch = batch
        self._cache: dict[str, int] = {}

    def many(self, texts: list[str]) -> np.ndarray:
        """Token counts of ``texts`` (no special tokens), as an int64 array."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        for i in range(0, len(todo), self.batch):
            part = todo[i : i + self.batch]
            for text, ids in zip(part, encode_batch(self.tokenizer, part), strict=True):
                self._cache[text] = len(ids)
        return np.fromiter((self._cache[t] for t in texts), np.int64, len(texts))

    def fresh(self, texts: list[str]) -> np.ndarray:
        """Counts of texts that will not recur (not cached)."""
        out = np.zeros(len(texts), dtype=np.int64)
        for i in range(0, len(texts), self.batch):
            ids = encode_batch(self.tokenizer, texts[i : i + self.batch])
            out[i : i + len(ids)] = [len(x) for x in ids]
        return out

    def one(self, text: str) -> int:
        return int(self.many([text])[0])

    def exact(self, text: str) -> int:
        """Tokens of a whole context, encoded piecewise (exact, memory-light)."""
        return len(encode_context(self.tokenizer, text))


class Plan(Protocol):
    """A sample with its random draws made; only its haystack size is open."""

    def choose(self, budget: float) -> Any:
        """The largest selection whose estimated context tokens are <= budget."""

    def render(self, selection: Any) -> str:
        """The context text of a selection."""

    def is_minimal(self, selection: Any) -> bool:
        """Whether the selection holds no more haystack than the task needs."""

    def next_piece(self, selection: Any) -> tuple[str, str] | None:
        """The haystack piece after the selection and its separator, if any."""


def largest_prefix(cumsum: np.ndarray, fixed: float, budget: float) -> int:
    """Largest n with ``fixed + cumsum[n-1] <= budget`` (cumsum of unit tokens)."""
    return int(np.searchsorted(cumsum, budget - fixed, side="right"))


def fit(
    plan: Plan,
    context_target: int,
    counter: TokenCounter,
    what: str,
) -> tuple[str, int]:
    """The context of ``plan`` whose token count lies within the band below
    ``context_target``, and that count; :class:`FitError` if none is found."""
    low = context_target - TOLERANCE * (context_target + 0.0)
    budget = _AIM * context_target
    best: tuple[str, int, Any] | None = None
    for _ in range(_ROUNDS):
        selection = plan.choose(budget)
        text = plan.render(selection)
        tokens = counter.exact(text)
        if tokens <= context_target:
            if best is None or tokens > best[1]:
                best = (text, tokens, selection)
            if tokens >= low:
                return text, tokens
        elif plan.is_minimal(selection):
            raise FitError(
                f"{what}: the needles and question alone need {tokens} context "
                f"tokens, more than the {context_target} this length leaves"
            )
        # Rescale the budget by how far the estimate was off, aiming inside.
        budget *= (_AIM * context_target) / max(tokens, 1)
    if best is not None and (
        topped := _top_up(plan, best, low, context_target, counter)
    ):
        return topped
    got = "nothing" if best is None else f"{best[1]} tokens"
    raise FitError(
        f"{what}: could not fit the context into [{low:.0f}, {context_target}] "
        f"tokens (best: {got})"
    )


def _top_up(
    plan: Plan,
    best: tuple[str, int, Any],
    low: float,
    high: int,
    counter: TokenCounter,
) -> tuple[str, int] | None:
    """Where one haystack piece is coarser than the band (a small target or a
    small vocabulary), end the context with the start of the next piece: the
    longest prefix that fits, cut at a space where that still reaches the band."""
    text, tokens, selection = best
    nxt = plan.next_piece(selection) if hasattr(plan, "next_piece") else None
    if nxt is None:
        return None
    tail = nxt[1] + nxt[0]
    hi = len(tail)
    for _ in range(_ROUNDS):
        lo_c, hi_c = 0, hi  # largest prefix whose estimate fits
        while lo_c < hi_c:
            mid = (lo_c + hi_c + 1) // 2
            fits = tokens + int(counter.fresh([tail[:mid]])[0]) <= high
            lo_c, hi_c = (mid, hi_c) if fits else (lo_c, mid - 1)
        cut = lo_c
        space = tail.rfind(" ", 1, cut + 1)
        for c in ([space] if space > 0 else []) + [cut]:
            total = counter.exact(text + tail[:c])
            if low <= total <= high:
                return text + tail[:c], total
        if total < low or cut == 0:
            return None
        hi = cut - 1  # the estimate was short: try a shorter prefix
    return None

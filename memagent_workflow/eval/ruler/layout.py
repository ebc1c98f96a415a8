"""Haystack pieces with needles inserted among them: the plan most tasks share,
and what every task family's draw returns (``Drawn``).

A context is ``n`` haystack pieces (sentences of an essay, noise lines,
distractor needles) joined by a separator, with the task's needles inserted
at fixed relative depths. Piece counts include their separator, so the
estimate of any ``n`` is a prefix sum.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from memagent_workflow.eval.ruler.fit import FitError, TokenCounter, largest_prefix
from memagent_workflow.eval.ruler.haystack import Haystack


def with_sep(texts: list[str], sep: str) -> list[str]:
    """Each piece as it is counted: a space before it, a newline after it."""
    return [sep + t for t in texts] if sep == " " else [t + sep for t in texts]


class CyclicPieces:
    """A fixed list of pieces (an essay's sentences, one noise line), repeated
    only where allowed; running past its end without leave is an error."""

    def __init__(
        self,
        texts: list[str],
        counts: np.ndarray,
        repeat: bool,
        source: str,
    ):
        self.texts, self.counts, self.repeat, self.source = (
            texts,
            counts,
            repeat,
            source,
        )
        self._cumsum = np.cumsum(counts)

    def cumsum(self, budget: float) -> np.ndarray:
        cycles = 1
        if self.repeat:
            cycles = max(1, int(budget // max(int(self._cumsum[-1]), 1)) + 2)
        if cycles == 1:
            return self._cumsum
        return np.cumsum(np.tile(self.counts, cycles))

    def too_short(self, tokens: float) -> FitError:
        return FitError(
            f"haystack {self.source} is too short: {len(self.texts)} pieces, "
            f"{int(self._cumsum[-1])} tokens; this length needs about {tokens:.0f}; "
            "pass "
            "--repeat-haystack to reuse it from the start (as RULER does) or a "
            "longer haystack"
        )

    def take(self, n: int) -> list[str]:
        if n > len(self.texts) and not self.repeat:
            raise self.too_short(n)
        k = len(self.texts)
        return [self.texts[i % k] for i in range(n)]


class StreamPieces:
    """Pieces drawn one by one (distractor needles), counted as they are made."""

    def __init__(self, make: Callable[[], str], counter: TokenCounter, sep: str):
        self.make, self.counter, self.sep = make, counter, sep
        self.texts: list[str] = []
        self._counts = np.zeros(0, dtype=np.int64)

    def cumsum(self, budget: float) -> np.ndarray:
        while not len(self._counts) or self._counts.sum() <= budget:
            more = [self.make() for _ in range(max(256, len(self.texts)))]
            counts = self.counter.fresh(with_sep(more, self.sep))
            self.texts += more
            self._counts = np.concatenate([self._counts, counts])
        return np.cumsum(self._counts)

    def take(self, n: int) -> list[str]:
        if n > len(self.texts):
            self.cumsum(float(self._counts.sum()) * 2 + 1)
        return self.texts[:n]


class InsertPlan:
    """``n`` haystack pieces with needles at relative depths (in [0, 1])."""

    def __init__(
        self,
        pieces: CyclicPieces | StreamPieces,
        needles: list[str],
        depths: list[float],
        sep: str,
        counter: TokenCounter,
    ):
        self.pieces, self.needles, self.depths, self.sep = pieces, needles, depths, sep
        self.fixed = float(counter.many(with_sep(needles, sep)).sum())

    def choose(self, budget: float) -> int:
        cumsum = self.pieces.cumsum(budget)
        n = largest_prefix(cumsum, self.fixed, budget)
        if isinstance(self.pieces, CyclicPieces) and n >= len(cumsum):
            raise self.pieces.too_short(budget)
        return max(1, n)

    def is_minimal(self, n: int) -> bool:
        return n <= 1

    def next_piece(self, n: int) -> tuple[str, str]:
        return self.pieces.take(n + 1)[-1], self.sep

    def render(self, n: int) -> str:
        pieces = self.pieces.take(n)
        at = sorted(
            (min(n, int(d * n)), i) for i, d in enumerate(self.depths)
        )  # (position, needle) in order of position
        out: list[str] = []
        j = 0
        for pos in range(n + 1):
            while j < len(at) and at[j][0] == pos:
                out.append(self.needles[at[j][1]])
                j += 1
            if pos < n:
                out.append(pieces[pos])
        return self.sep.join(out)


def uniform_depths(rng: random.Random, k: int) -> list[float]:
    """``k`` depths drawn uniformly (RULER: random positions among lines)."""
    return [rng.random() for _ in range(k)]


# RULER places essay needles at depths drawn without replacement from 40
# evenly spaced percentages.
DEPTH_GRID = [round(100 * i / 39) / 100 for i in range(40)]


def grid_depths(rng: random.Random, k: int) -> list[float]:
    return sorted(rng.sample(DEPTH_GRID, k))


@dataclass
class Drawn:
    """One sample before fitting."""

    question: str
    answers: list[str]
    plan: Any
    extra: dict[str, Any]


class Haystacks:
    """The shared, pre-counted pieces of each haystack (counted once per run)."""

    def __init__(self, counter: TokenCounter, repeat: bool):
        self.counter, self.repeat = counter, repeat
        self._cyclic: dict[tuple[str, str], CyclicPieces] = {}
        self._docs: dict[str, np.ndarray] = {}

    def cyclic(self, key: str, texts: list[str], sep: str, source: str) -> CyclicPieces:
        if (key, sep) not in self._cyclic:
            counts = self.counter.many(with_sep(texts, sep))
            repeat = self.repeat or source == "built-in"
            self._cyclic[key, sep] = CyclicPieces(texts, counts, repeat, source)
        return self._cyclic[key, sep]

    def doc_counts(self, hay: Haystack) -> np.ndarray:
        """Tokens of each document of a QA haystack with its blank line."""
        if hay.source not in self._docs:
            self._docs[hay.source] = self.counter.many([d + "\n\n" for d in hay.docs])
        return self._docs[hay.source]

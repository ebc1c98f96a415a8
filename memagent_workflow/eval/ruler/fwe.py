"""Frequent-words extraction (fwe): coded words drawn from a Zipf law, shuffled;
the answer is the three most frequent (the most frequent, ``...``, is noise)."""

from __future__ import annotations

import random
import string

import numpy as np

from memagent_workflow.eval.ruler import tasks as T
from memagent_workflow.eval.ruler.fit import TokenCounter
from memagent_workflow.eval.ruler.haystack import Haystack
from memagent_workflow.eval.ruler.layout import Drawn, Haystacks, with_sep


def _zeta(alpha: float, terms: int = 10_000) -> float:
    """Riemann zeta for alpha > 1 (partial sum plus the integral tail)."""
    k = np.arange(1, terms + 1, dtype=np.float64)
    return float(
        np.sum(k**-alpha) + terms ** (1 - alpha) / (alpha - 1) - 0.5 * terms**-alpha
    )


class WordsPlan:
    """Frequent-words extraction: ``num_words`` drawn from a Zipf law over a
    coded vocabulary, shuffled; the size chosen is ``num_words``."""

    def __init__(
        self, vocab: list[str], alpha: float, seed: int, counter: TokenCounter
    ):
        self.vocab, self.seed = vocab, seed
        k = np.arange(1, len(vocab) + 1, dtype=np.float64)
        self.share = k**-alpha / _zeta(alpha)
        self.word_tokens = counter.many(with_sep(vocab, " ")).astype(np.float64)

    def counts(self, num_words: int) -> np.ndarray:
        return (num_words * self.share).astype(np.int64)

    def estimate(self, num_words: int) -> float:
        return float(self.counts(num_words) @ self.word_tokens)

    def choose(self, budget: float) -> int:
        lo, hi = 1, 1
        while self.estimate(hi) <= budget:
            hi *= 2
        while lo < hi:  # largest n with estimate(n) <= budget
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if self.estimate(mid) <= budget else (lo, mid - 1)
        return lo

    def is_minimal(self, num_words: int) -> bool:
        return self.counts(num_words)[3] < 2  # the answers barely appear

    def next_piece(self, num_words: int) -> tuple[str, str]:
        """More of the noise word (never an answer) to top a context up."""
        return " ".join([self.vocab[0]] * 64), " "

    def render(self, num_words: int) -> str:
        words = [
            w
            for w, c in zip(self.vocab, self.counts(num_words), strict=True)
            for _ in range(c)
        ]
        random.Random(self.seed).shuffle(words)
        return " ".join(words)


def fwe_sample(
    task: T.Task,
    rng: random.Random,
    hay: Haystack | None,
    shared: Haystacks,
    *,
    length: int = 0,
) -> Drawn:
    size = max(8, (length - task.tokens_to_generate) // 50)  # RULER's vocabulary size
    word_len = task.params["word_len"]
    vocab: set[str] = set()
    while len(vocab) < size:
        vocab.add("".join(rng.choices(string.ascii_lowercase, k=word_len)))
    ordered = sorted(vocab)
    rng.shuffle(ordered)
    ordered[0] = "..."  # the most frequent "word" is noise, as in RULER
    plan = WordsPlan(ordered, task.params["alpha"], rng.getrandbits(64), shared.counter)
    return Drawn(T.FWE_QUESTION, ordered[1:4], plan, {"vocabulary": size})

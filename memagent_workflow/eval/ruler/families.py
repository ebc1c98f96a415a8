"""The four task families: the random draws of one sample, as a fitting plan.

Each ``*_sample`` draws what a sample is made of (keys, values, chains, coded
words, a question and its documents) from the sample's own random generator
and returns the question, the gold answers and a plan whose haystack size the
fitting (``fit.py``) still chooses.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

from memagent_workflow.eval.ruler import tasks as T
from memagent_workflow.eval.ruler.fit import FitError, TokenCounter, largest_prefix
from memagent_workflow.eval.ruler.haystack import Haystack
from memagent_workflow.eval.ruler.layout import (
    CyclicPieces,
    InsertPlan,
    StreamPieces,
    grid_depths,
    uniform_depths,
    with_sep,
)
from memagent_workflow.eval.ruler.words import draw, draw_distinct


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


def _join_keys(keys: list[str]) -> str:
    return keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + ", and " + keys[-1]


def niah_sample(
    task: T.Task, rng: random.Random, hay: Haystack | None, shared: Haystacks
) -> Drawn:
    p = task.params
    keys = draw_distinct(rng, p["key_type"], p["keys"])
    values = draw_distinct(rng, p["value_type"], p["keys"] * p["values"], set(keys))
    values_of = [
        values[i * p["values"] : (i + 1) * p["values"]] for i in range(len(keys))
    ]
    kind = p["value_type"]
    needles = [
        T.NEEDLE.format(kind=kind, key=k, value=v)
        for k, vs in zip(keys, values_of, strict=True)
        for v in vs
    ]
    rng.shuffle(needles)
    asked = rng.sample(range(len(keys)), p["queries"])
    answers = [v for i in asked for v in values_of[i]]
    query = _join_keys([keys[i] for i in asked])
    if p["queries"] * p["values"] == 1:
        question = T.NIAH_SINGULAR.format(kind=kind[:-1], query=query)
    else:
        question = T.NIAH_PLURAL.format(kind=kind, query=query)

    if task.haystack == T.ESSAY:
        pieces = shared.cyclic(hay.source, hay.sentences, " ", hay.source)
        plan = InsertPlan(
            pieces, needles, grid_depths(rng, len(needles)), " ", shared.counter
        )
    elif task.haystack == T.NOISE:
        pieces = shared.cyclic("noise", [T.NOISE_SENTENCE], "\n", "built-in")
        plan = InsertPlan(
            pieces, needles, uniform_depths(rng, len(needles)), "\n", shared.counter
        )
    else:  # distractor needles: other keys (never a real one) with other values
        stream = random.Random(rng.getrandbits(64))
        taken = set(keys)

        def distractor() -> str:
            key = draw_distinct(stream, p["key_type"], 1, taken)[0]
            return T.NEEDLE.format(kind=kind, key=key, value=draw(stream, kind))

        pieces = StreamPieces(distractor, shared.counter, "\n")
        plan = InsertPlan(
            pieces, needles, uniform_depths(rng, len(needles)), "\n", shared.counter
        )
    extra = {"keys": [keys[i] for i in asked], "needles": len(needles)}
    return Drawn(question, answers, plan, extra)


def vt_sample(
    task: T.Task, rng: random.Random, hay: Haystack | None, shared: Haystacks
) -> Drawn:
    hops, chains = task.params["hops"], task.params["chains"]
    names: list[str] = []
    while len(names) < chains * (hops + 1):
        name = "".join(rng.choices(string.ascii_uppercase, k=5))
        if name not in names:
            names.append(name)
    statements: list[str] = []
    depths: list[float] = []
    first_value = None
    for c in range(chains):
        chain = names[c * (hops + 1) : (c + 1) * (hops + 1)]
        value = str(rng.randint(10000, 99999))
        first_value = first_value or value
        statements += [f"VAR {chain[0]} = {value}"]
        statements += [f"VAR {b} = VAR {a}" for a, b in pairwise(chain)]
        depths += sorted(rng.random() for _ in chain)  # a chain reads in order
    pieces = shared.cyclic("noise", [T.NOISE_SENTENCE], "\n", "built-in")
    plan = InsertPlan(pieces, statements, depths, "\n", shared.counter)
    question = T.VT_QUESTION.format(query=first_value)
    return Drawn(question, names[: hops + 1], plan, {"value": first_value})


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


class DocsPlan:
    """QA: the gold documents plus others, in a random order; documents that
    would overshoot are skipped for later, smaller ones."""

    def __init__(
        self,
        hay: Haystack,
        order: list[int],
        gold: set[int],
        seed: int,
        counts: np.ndarray,
        repeat: bool,
    ):
        self.hay, self.order, self.gold, self.seed = hay, order, gold, seed
        self.counts, self.repeat = counts, repeat
        self.header = 6.0  # "Document 123:\n" and the blank line, about

    def choose(self, budget: float) -> list[int]:
        tokens = self.counts[self.order] + self.header
        cumsum = np.cumsum(tokens)
        n = largest_prefix(cumsum, 0.0, budget)
        if n >= len(self.order) and not self.repeat:
            raise FitError(
                f"haystack {self.hay.source} is too short: {len(self.hay.docs)} "
                f"documents, {int(cumsum[-1])} tokens; this length needs about "
                f"{budget:.0f}; pass --repeat-haystack to reuse documents (as RULER "
                "does) or a larger haystack"
            )
        chosen = list(self.order[: max(n, len(self.gold))])
        room = budget - float(tokens[: len(chosen)].sum())
        for j in range(len(chosen), min(len(self.order), len(chosen) + 256)):
            if tokens[j] <= room:  # fill the gap with documents that fit
                chosen.append(self.order[j])
                room -= float(tokens[j])
        return chosen

    def is_minimal(self, chosen: list[int]) -> bool:
        return len(chosen) <= len(self.gold)

    def next_piece(self, chosen: list[int]) -> tuple[str, str] | None:
        """A further (distractor) document, whose start may top a context up."""
        taken = set(chosen)
        rest = (d for d in self.order if d not in taken)
        d = next(rest, None)
        if d is None:
            return None
        text = self.hay.docs[d % len(self.hay.docs)]
        return T.DOCUMENT.format(i=len(chosen) + 1, text=text), "\n\n"

    def render(self, chosen: list[int]) -> str:
        shown = list(chosen)
        random.Random(self.seed).shuffle(shown)
        return "\n\n".join(
            T.DOCUMENT.format(i=i + 1, text=self.hay.docs[d % len(self.hay.docs)])
            for i, d in enumerate(shown)
        )


def qa_sample(
    task: T.Task,
    rng: random.Random,
    hay: Haystack,
    shared: Haystacks,
    *,
    index: int = 0,
) -> Drawn:
    qa = hay.qas[index % len(hay.qas)]
    gold = list(dict.fromkeys(qa.gold))
    related = [d for d in qa.related if d not in gold]
    rng.shuffle(related)
    others = [
        d
        for d in rng.sample(range(len(hay.docs)), len(hay.docs))
        if d not in set(gold) | set(related)
    ]
    order = gold + related + others
    if shared.repeat:  # RULER repeats the pool when the length needs it
        order += [d + len(hay.docs) * (r + 1) for r in range(7) for d in order]
    base = shared.doc_counts(hay)
    counts = np.tile(base, 8) if shared.repeat else base
    plan = DocsPlan(hay, order, set(gold), rng.getrandbits(64), counts, shared.repeat)
    question = T.QA_QUESTION.format(query=qa.query)
    return Drawn(question, list(qa.answers), plan, {"qa_index": index % len(hay.qas)})


def draw_sample(
    task: T.Task,
    rng: random.Random,
    hay: Haystack | None,
    shared: Haystacks,
    *,
    length: int,
    index: int,
) -> Drawn:
    """One sample's random draws for ``task``."""
    if task.family == "niah":
        return niah_sample(task, rng, hay, shared)
    if task.family == "vt":
        return vt_sample(task, rng, hay, shared)
    if task.family == "fwe":
        return fwe_sample(task, rng, hay, shared, length=length)
    if task.family == "qa":
        return qa_sample(task, rng, hay, shared, index=index)
    raise ValueError(f"unknown task family {task.family!r}")

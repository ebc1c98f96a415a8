"""Question answering (qa_1 SQuAD, qa_2 HotpotQA): a question's gold documents
among distractors from the same pool, numbered ``Document i:``."""

from __future__ import annotations

import random

import numpy as np

from memagent_workflow.eval.ruler import tasks as T
from memagent_workflow.eval.ruler.fit import FitError, largest_prefix
from memagent_workflow.eval.ruler.haystack import Haystack
from memagent_workflow.eval.ruler.layout import Drawn, Haystacks


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
    # what eval traces locate: the supporting sentences where the source names
    # them (HotpotQA), else the gold documents themselves
    evidence = list(qa.evidence) or [hay.docs[d] for d in gold]
    extra = {"qa_index": index % len(hay.qas), "evidence": evidence}
    return Drawn(question, list(qa.answers), plan, extra)

"""Variable tracking (vt): chains ``VAR A = 12345``, ``VAR B = VAR A``, ... in
noise lines; the answer is every variable that ends up holding the value."""

from __future__ import annotations

import random
import string
from itertools import pairwise

from memagent_workflow.eval.ruler import tasks as T
from memagent_workflow.eval.ruler.haystack import Haystack
from memagent_workflow.eval.ruler.layout import Drawn, Haystacks, InsertPlan


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
    extra = {"value": first_value, "evidence": statements[: hops + 1]}  # the chain
    return Drawn(question, names[: hops + 1], plan, extra)

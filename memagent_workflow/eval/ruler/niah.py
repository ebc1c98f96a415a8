"""Needle in a haystack (niah_single_1..3, niah_multikey_1..3, niah_multivalue,
niah_multiquery): keys with values hidden as needle sentences in noise, essay
sentences or other needles; the question asks for the values of some keys."""

from __future__ import annotations

import random

from memagent_workflow.eval.ruler import tasks as T
from memagent_workflow.eval.ruler.haystack import Haystack
from memagent_workflow.eval.ruler.layout import (
    Drawn,
    Haystacks,
    InsertPlan,
    StreamPieces,
    grid_depths,
    uniform_depths,
)
from memagent_workflow.eval.ruler.words import draw, draw_distinct


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
    evidence = [  # the asked keys' needle sentences (eval traces locate them)
        T.NEEDLE.format(kind=kind, key=keys[i], value=v)
        for i in asked
        for v in values_of[i]
    ]
    extra = {
        "keys": [keys[i] for i in asked],
        "needles": len(needles),
        "evidence": evidence,
    }
    return Drawn(question, answers, plan, extra)

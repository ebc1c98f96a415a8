"""The original evaluation's per-sample scores of a final-turn response.

As ``taskutils/memory_eval/ruler_hqa.py`` (``get_pred`` with ``calc_metrics``)
scores: the answer ``reward.extract_answer`` reads under the answer protocol,
compared with the first gold answer only, after SQuAD normalisation; each quirk
is noted where it is reproduced. Training's rewards are in ``reward/``.
"""

from __future__ import annotations

import math

from memagent_workflow.reward import extract_answer
from memagent_workflow.reward.squad import f1, normalize_answer


def _original_sub_em(pred: str, gold: str) -> bool:
    """``g in p or p in g`` after SQuAD normalisation, with no guard: a
    prediction that normalises to "" ("a", "the", "!!") is inside every gold."""
    p, g = normalize_answer(pred), normalize_answer(gold)
    return g in p or p in g


def eval_metrics(
    response: str, answers: list[str], protocol: str
) -> dict[str, float | str | None] | None:
    """The original's per-sample record: ``{answer, sub_em, em, f1}``, or None
    for a sample it does not count (an output that is exactly "": it skips it,
    so it enters no average; a failed request returned that too).

    Scores compare with ``answers[0]`` only (the original sets
    ``item['answer'] = item['answers'][0]``). An answer that is None or "" (e.g.
    "the answer is ." stripped of its dot) scores 0 on every metric (``if
    item['pred']``). F1 is rounded to 2 decimals as ``calc_metrics`` does.
    """
    if response == "":  # checked before any strip: " " is scored (and is 0)
        return None
    if not answers:
        raise ValueError("a sample without gold answers cannot be scored")
    pred = extract_answer(response, protocol)
    if not pred:
        return {"answer": pred, "sub_em": 0.0, "em": 0.0, "f1": 0.0}
    gold = answers[0]
    return {
        "answer": pred,
        "sub_em": float(_original_sub_em(pred, gold)),
        "em": float(normalize_answer(pred) == normalize_answer(gold)),
        "f1": round(f1(pred, gold), 2),
    }


def eval_score(response: str, answers: list[str], protocol: str) -> float:
    """The original's per-sample RULER-HQA score (sub-EM, 0.0 or 1.0) of a
    final-turn ``response`` under ``protocol``; NaN for an empty output, which
    the original counts in no average (``math.isnan`` tells it apart)."""
    metrics = eval_metrics(response, answers, protocol)
    return math.nan if metrics is None else float(metrics["sub_em"])

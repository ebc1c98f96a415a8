"""RULER's string-match scores, applied to the answer the project extracts.

RULER scores a prediction by case-insensitive containment of the gold values:
``string_match_all`` is the fraction of gold values found (niah, vt, fwe),
``string_match_part`` is 1 if any is found (qa). Here the prediction is the
answer the eval protocol extracts (``memagent.answer_protocol``: the final
turn's last ``\\boxed{}``, or what follows "the answer is"); no
extracted answer, or a failed sample, scores 0, as everywhere in this eval.
"""

from __future__ import annotations

from typing import Any

from memagent_workflow.eval.ruler.tasks import ALL, PART, TASKS


def string_match_all(prediction: str, golds: list[str]) -> float:
    """Fraction of ``golds`` contained in ``prediction`` (case-insensitive)."""
    p = prediction.lower()
    return sum(g.lower() in p for g in golds) / len(golds) if golds else 0.0


def string_match_part(prediction: str, golds: list[str]) -> float:
    """1.0 if any of ``golds`` is contained in ``prediction`` (case-insensitive)."""
    p = prediction.lower()
    return float(any(g.lower() in p for g in golds))


METRICS = {ALL: string_match_all, PART: string_match_part}


def score_record(record: dict[str, Any], task: str) -> dict[str, Any]:
    """``record`` with ``task``, ``metric`` and ``ruler_score`` (0..1) added."""
    metric = TASKS[task].metric
    answer = record.get("extracted")
    ok = answer is not None and record.get("error") is None
    score = METRICS[metric](answer, record["answers"]) if ok else 0.0
    return {**record, "task": task, "metric": metric, "ruler_score": score}


def _pct(records: list[dict[str, Any]]) -> float | None:
    vals = [float(r.get("ruler_score") or 0.0) for r in records]
    return 100.0 * sum(vals) / len(vals) if vals else None


def summary_columns(records: list[dict[str, Any]], task: str) -> dict[str, Any]:
    """A summary row's RULER columns: ``metric``, and ``score`` in % over every
    record (a failed one scores 0) and ``score_non_failed`` over the others."""
    ok = [r for r in records if r.get("error") is None]
    return {
        "metric": TASKS[task].metric,
        "score": _pct(records),
        "score_non_failed": _pct(ok),
    }

"""The SQuAD answer metrics (after SQuAD's normalisation: case, punctuation,
articles, white space), each the max over the gold answers: logged by the
training workflow (``metrics.py``), scored by the eval (``eval/scoring.py``) and
used by the ``squad`` training reward (``reward/__init__.py``)."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)
_SPECIAL_ANSWERS = ("yes", "no", "noanswer")


def normalize_answer(s: str) -> str:
    """Lower-case, drop punctuation and articles, collapse white space."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def gold_list(golds: str | Iterable[str]) -> list[str]:
    """The gold answers as a list (one answer may be given as a string)."""
    return [golds] if isinstance(golds, str) else list(golds)


def exact_match(pred: str, golds: str | Iterable[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer."""
    p = normalize_answer(pred)
    return float(any(p == normalize_answer(g) for g in gold_list(golds)))


def sub_em(pred: str, golds: str | Iterable[str]) -> float:
    """1.0 if, for any gold, one normalised string contains the other.

    An empty normalised prediction scores 0.0 (it would be inside every gold).
    """
    p = normalize_answer(pred)
    if not p:
        return 0.0
    for g in gold_list(golds):
        n = normalize_answer(g)
        if n and (n in p or p in n):
            return 1.0
    return 0.0


def _f1_one(pred: str, gold: str) -> float:
    p, g = normalize_answer(pred), normalize_answer(gold)
    if (p in _SPECIAL_ANSWERS or g in _SPECIAL_ANSWERS) and p != g:
        return 0.0
    p_tokens, g_tokens = p.split(), g.split()
    common = Counter(p_tokens) & Counter(g_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(p_tokens)
    recall = same / len(g_tokens)
    return 2 * precision * recall / (precision + recall)


def f1(pred: str, golds: str | Iterable[str]) -> float:
    """SQuAD token F1, max over the gold answers."""
    return max((_f1_one(pred, g) for g in gold_list(golds)), default=0.0)

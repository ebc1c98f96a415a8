"""Answer extraction, the training rewards and the HotpotQA metrics.

Two training rewards, picked by ``memagent.reward``:

- ``original_reward`` (default): the verifier the released MemAgent models were
  trained with (verl's HotpotQA reward): only the last 300 characters of the
  response count, lower-cased; the answer is the last ``\\boxed{}`` (or the
  ``\\boxed answer`` space form up to the next ``$``); it must equal a gold
  answer after removing spaces and a few LaTeX tokens. Articles and
  punctuation are kept, so ``The Beatles`` is not ``Beatles``.
- ``squad_reward``: the last complete ``\\boxed{}`` anywhere in the response,
  exact match after SQuAD normalisation (case, articles, punctuation, spaces):
  more lenient than the original.

``sub_em``, ``exact_match`` and ``f1`` are the RULER-HQA evaluation metrics
(SQuAD normalisation, max over the gold answers); evaluation scores ``sub_em``
as the original evaluation does, whichever reward trained the model.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable

_BOX = "\\boxed{"
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)
_SPECIAL_ANSWERS = ("yes", "no", "noanswer")


def extract_boxed(text: str) -> str | None:
    """Content of the last complete ``\\boxed{...}`` in ``text`` (nested braces ok)."""
    start = text.rfind(_BOX)
    while start != -1:
        depth = 1
        i = start + len(_BOX)
        while i < len(text):
            ch = text[i]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    return text[start + len(_BOX) : i]
            i += 1
        # The last box is unterminated; an earlier complete one may still exist.
        start = text.rfind(_BOX, 0, start)
    return None


def normalize_answer(s: str) -> str:
    """Lower-case, drop punctuation and articles, collapse white space."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _golds(golds: str | Iterable[str]) -> list[str]:
    return [golds] if isinstance(golds, str) else list(golds)


def exact_match(pred: str, golds: str | Iterable[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer."""
    p = normalize_answer(pred)
    return float(any(p == normalize_answer(g) for g in _golds(golds)))


def sub_em(pred: str, golds: str | Iterable[str]) -> float:
    """1.0 if, for any gold, one normalised string contains the other.

    An empty normalised prediction scores 0.0 (it would be inside every gold).
    """
    p = normalize_answer(pred)
    if not p:
        return 0.0
    for g in _golds(golds):
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
    return max((_f1_one(pred, g) for g in _golds(golds)), default=0.0)


def squad_reward(response: str, golds: str | Iterable[str]) -> float:
    """1.0 iff the last complete boxed answer exact-matches a gold after SQuAD
    normalisation (case, articles, punctuation and spaces ignored)."""
    boxed = extract_boxed(response)
    if boxed is None:
        return 0.0
    return exact_match(boxed, golds)


# ------------------------------------------------------- the original verifier

ORIGINAL_WINDOW = 300  # characters at the end of the response the original reads
# The MATH-style clean-up the original applies to both sides, in its order;
# spaces are removed last.
_ORIGINAL_EDITS = (
    ("\n", ""),
    ("\\!", ""),
    ("\\\\", "\\"),
    ("tfrac", "frac"),
    ("dfrac", "frac"),
    ("\\left", ""),
    ("\\right", ""),
    ("^{\\circ}", ""),
    ("^\\circ", ""),
    ("\\$", ""),
    ("\\%", ""),
    (" .", " 0."),
    ("{.", "{0."),
)


def original_normalize(s: str) -> str:
    """The original verifier's string clean-up: LaTeX tokens out, spaces out."""
    for old, new in _ORIGINAL_EDITS:
        s = s.replace(old, new)
    return s.replace(" ", "")


def original_boxed(text: str) -> str | None:
    """The answer the original verifier reads from ``text``, or None.

    A ``\\boxed `` followed by a space wins wherever it is: the answer is what
    follows its last occurrence, up to the next ``$``. Otherwise the last
    ``\\boxed`` is brace-matched and must read ``\\boxed{...}``. (The original
    also finds an ``\\fbox{...}`` when there is no ``\\boxed``, but never
    accepts it as an answer, so it is not looked for here.)
    """
    if "\\boxed " in text:
        return text.rsplit("\\boxed ", 1)[1].split("$", 1)[0]
    start = text.rfind("\\boxed")
    if start < 0:
        return None
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                box = text[start : i + 1]
                if not box.startswith(_BOX):  # e.g. "\\boxedx{...}"
                    return None
                return box[len(_BOX) : -1]
    return None


def original_reward(response: str, golds: str | list[str]) -> float:
    """The original MemAgent training verifier (verl's HotpotQA reward).

    1.0 iff the boxed answer in the last 300 characters of ``response``,
    lower-cased and cleaned by ``original_normalize``, equals a gold answer
    treated the same way; else 0.0.
    """
    answer = original_boxed(response[-ORIGINAL_WINDOW:].lower())
    if answer is None:
        return 0.0
    answer = original_normalize(answer)
    return float(any(answer == original_normalize(g.lower()) for g in _golds(golds)))


REWARDS: dict[str, Callable[[str, list[str]], float]] = {
    "original": original_reward,
    "squad": squad_reward,
}


def reward_function(name: str) -> Callable[[str, list[str]], float]:
    """The training reward called ``name`` (``memagent.reward``)."""
    try:
        return REWARDS[name]
    except KeyError:
        raise ValueError(
            f"memagent.reward={name!r}: choose one of {sorted(REWARDS)}"
        ) from None

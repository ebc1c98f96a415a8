"""The answer protocols against the original evaluation's per-sample path.

``Original`` below is this test's own transcription of the original MemAgent
evaluation (``taskutils/memory_eval/ruler_hqa.py`` ``get_pred`` with
``utils/__init__.py``: ``extract_solution``, ``extract_answer``,
``extract_boxed_answer``, ``calc_metrics``), written as a spec: the quirks are
kept on purpose. Thousands of random responses built from the fragments the
quirks are about are scored both ways and must agree exactly. The quirks one
case at a time, the training rewards and the workflow: test_answer_protocol_cases.py.
"""

from __future__ import annotations

import math
import random
import re
import string
from collections import Counter

import pytest

from memagent_workflow.eval.scoring import eval_metrics, eval_score
from memagent_workflow.reward import PROTOCOLS, extract_answer

# ------------------------------------------------------------ the reference


class Original:
    """The original per-sample path, transcribed (FORCE_THINK unset)."""

    @staticmethod
    def solution(text):
        if "</think>" not in text:
            return text, text
        return text.split("</think>")[-1].strip(), text

    @staticmethod
    def answer_is(response):
        response = response.replace("*", "")
        if "the answer is" in response:
            return (
                response.rsplit("the answer is", 1)[-1]
                .strip()
                .replace("<｜Assistant｜>", "")
                .replace("<｜end▁of▁sentence｜>", "")
                .strip()
                .strip(".")
                .strip()
            )
        return None

    @staticmethod
    def last_boxed(text):
        idx = text.rfind("\\boxed")
        if "\\boxed " in text:
            return "\\boxed " + text.split("\\boxed ")[-1].split("$")[0]
        if idx < 0:
            idx = text.rfind("\\fbox")
            if idx < 0:
                return None
        i, close, depth = idx, None, 0
        while i < len(text):
            if text[i] == "{":
                depth += 1
            if text[i] == "}":
                depth -= 1
                if depth == 0:
                    close = i
                    break
            i += 1
        return None if close is None else text[idx : close + 1]

    @classmethod
    def boxed(cls, text):
        s = cls.last_boxed(text)
        if s is None:
            return None
        if "\\boxed " in s:
            assert s[: len("\\boxed ")] == "\\boxed "
            return s[len("\\boxed ") :]
        # The original asserts here and its script stops; a crash has no score,
        # and the project reads it as "no answer".
        if s[: len("\\boxed{")] != "\\boxed{" or s[-1] != "}":
            return None
        return s[len("\\boxed{") : -1]

    @staticmethod
    def normalize(s):
        s = s.lower()
        s = "".join(ch for ch in s if ch not in set(string.punctuation))
        s = re.sub(r"\b(a|an|the)\b", " ", s)
        return " ".join(s.split())

    @classmethod
    def f1(cls, pred, gold):
        p, g = cls.normalize(pred), cls.normalize(gold)
        if p in ["yes", "no", "noanswer"] and p != g:
            return 0
        if g in ["yes", "no", "noanswer"] and p != g:
            return 0
        common = Counter(p.split()) & Counter(g.split())
        same = sum(common.values())
        if same == 0:
            return 0
        precision, recall = same / len(p.split()), same / len(g.split())
        return 2 * precision * recall / (precision + recall)

    @classmethod
    def calc(cls, pred, gold):
        p, g = cls.normalize(pred), cls.normalize(gold)
        sub = 0 + ((g in p) or (p in g))
        return {
            "sub_em": round(sub / 1, 2),
            "em": round(float(p == g) / 1, 2),
            "f1": round(cls.f1(pred, gold) / 1, 2),
        }

    @classmethod
    def per_sample(cls, output, answers, protocol):
        """None where the original skips the sample, else its record."""
        if output == "":
            return None
        extract = cls.answer_is if protocol == "answer_is" else cls.boxed
        response = output.strip()
        pred, _ = cls.solution(response)
        pred = extract(pred) if pred else extract(response)
        gold = answers[0]
        if not pred:
            return {"answer": pred, "sub_em": 0, "em": 0, "f1": 0}
        return {"answer": pred, **cls.calc(pred, gold)}


# ------------------------------------------------------------ random cases

FRAGMENTS = [
    "the answer is", "The answer is", "the answer is ", "THE ANSWER IS",
    "Therefore, the answer is ", "the answer  is", "*", "**", "</think>",
    "<think>", "\\boxed{", "\\boxed ", "\\boxed", "\\fbox{", "\\boxedx{", "{", "}",
    "$", ".", "..", " ", "  ", "\n", "\t", "\u3000", "Paris", "paris", "PARIS",
    "France", "a", "an", "the", "The", "!!", "?", ",", "yes", "no", "noanswer",
    "<｜Assistant｜>", "<｜end▁of▁sentence｜>", "1,000", "é", "Ünïcode", "-", "'s",
]  # fmt: skip
GOLD_FRAGMENTS = [
    "Paris", "paris", "France", "the", "a", "yes", "no", "1,000", "New York",
    "!!", " ", ".", "é", "Paris, France", "",
]  # fmt: skip


def random_text(rng: random.Random, pool: list[str], max_parts: int) -> str:
    parts = []
    for _ in range(rng.randint(0, max_parts)):
        if rng.random() < 0.15:
            parts.append("".join(rng.choices(string.printable, k=rng.randint(1, 4))))
        else:
            parts.append(rng.choice(pool))
    return "".join(parts)


def random_cases(seed: int, n: int) -> list[tuple[str, list[str]]]:
    rng = random.Random(seed)
    return [
        (
            random_text(rng, FRAGMENTS, 14),
            [random_text(rng, GOLD_FRAGMENTS, 3) for _ in range(rng.randint(1, 3))],
        )
        for _ in range(n)
    ]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_thousands_of_random_cases_agree_with_the_original(protocol):
    cases = random_cases(seed=19, n=6000)
    answered = skipped = right = 0
    for response, answers in cases:
        want = Original.per_sample(response, answers, protocol)
        got = eval_metrics(response, answers, protocol)
        assert got == want, (response, answers)
        score = eval_score(response, answers, protocol)
        if want is None:
            assert math.isnan(score)
            assert extract_answer(response, protocol) is None
            skipped += 1
            continue
        assert score == want["sub_em"], (response, answers)
        assert extract_answer(response, protocol) == want["answer"]
        answered += want["answer"] is not None
        right += score == 1.0
    # The cases reach every branch: skipped, unanswered, right and wrong.
    assert skipped > 50 and answered > 500 and 200 < right < answered, (
        skipped,
        answered,
        right,
    )

"""The answer protocols case by case: the original evaluation's quirks of
extraction and scoring under ``answer_is`` and ``boxed``, one written case
each, an empty output left uncounted, the ``answer_is`` training rewards, an
unknown protocol refused, and ``answer_is`` through the workflow.

The random cases scored against a transcription of the original are in
test_answer_protocol.py.
"""

from __future__ import annotations

import math

import pytest

from memagent_workflow.eval.scoring import eval_metrics, eval_score
from memagent_workflow.reward import PROTOCOLS, extract_answer, reward_function


@pytest.mark.parametrize(
    "response, answers, expected",
    [
        ("So the answer is Paris.", ["Paris"], "Paris"),  # trailing dot stripped
        ("The answer is Paris", ["Paris"], None),  # case-sensitive phrase
        ("the answer is Rome. No, the answer is **Paris**", ["Paris"], "Paris"),
        ("reasoning the answer is Rome</think>Final: the answer is Paris", [], "Paris"),
        # Nothing after </think>: the whole response is read, the tag included.
        ("the answer is Rome</think>   ", [], "Rome</think>"),
        ("the answer is Paris<｜end▁of▁sentence｜>", [], "Paris"),
        ("the answer is ...", [], ""),  # found, but empty
        ("no phrase at all", [], None),
    ],
)
def test_answer_is_extraction_quirks(response, answers, expected):
    assert extract_answer(response, "answer_is") == expected


@pytest.mark.parametrize(
    "response, answers, score",
    [
        ("the answer is Paris", ["Paris"], 1.0),
        ("the answer is Paris", ["London", "Paris"], 0.0),  # the first gold only
        ("the answer is the", ["Paris"], 1.0),  # normalises to "": inside any gold
        ("the answer is !!", ["Paris"], 1.0),
        ("the answer is .", ["Paris"], 0.0),  # extracts "": scores 0
        ("the answer is Par", ["Paris"], 1.0),  # prediction inside the gold
        ("the answer is Paris, France", ["paris"], 1.0),  # gold inside it
        ("   ", ["Paris"], 0.0),  # white space is an output: counted, wrong
    ],
)
def test_answer_is_scores_as_the_original(response, answers, score):
    assert eval_score(response, answers, "answer_is") == score


def test_an_empty_output_is_not_counted_under_either_protocol():
    for protocol in PROTOCOLS:
        assert eval_metrics("", ["x"], protocol) is None
        assert math.isnan(eval_score("", ["x"], protocol))


@pytest.mark.parametrize(
    "response, expected",
    [
        ("\\boxed{Paris} then \\boxed{Rome}", "Rome"),  # the last box
        ("\\boxed{a{b}c}", "a{b}c"),  # nested braces
        ("\\boxed{Paris} \\boxed{unterminated", None),  # last one open: none
        ("\\boxed Paris$ and \\boxed{Rome}", "Paris"),  # the space form wins
        ("\\fbox{Paris}", None),  # the original would stop on its assert
        ("x" * 400 + "\\boxed{Paris}", "Paris"),  # no 300-character window here
    ],
)
def test_boxed_extraction_is_the_original_evals(response, expected):
    assert extract_answer(response, "boxed") == expected


def test_boxed_eval_scores_the_first_gold_without_the_empty_guard():
    assert eval_score("\\boxed{Paris}", ["London", "Paris"], "boxed") == 0.0
    assert eval_score("\\boxed{a}", ["Paris"], "boxed") == 1.0
    assert eval_score("\\boxed{}", ["Paris"], "boxed") == 0.0


def test_answer_is_training_reward_is_strict_like_the_original_verifier():
    original = reward_function("original", "answer_is")
    assert original("Therefore, the answer is New York.", ["new york"]) == 1.0
    assert original("Therefore, the answer is the New York", ["New York"]) == 0.0
    assert original("\\boxed{New York}", ["New York"]) == 0.0  # no phrase
    squad = reward_function("squad", "answer_is")
    assert squad("Therefore, the answer is the New York", ["New York"]) == 1.0
    assert reward_function("original", "boxed")("\\boxed{x}", ["x"]) == 1.0


def test_unknown_protocol_is_refused():
    with pytest.raises(ValueError, match="answer_protocol"):
        extract_answer("x", "json")
    with pytest.raises(ValueError, match="answer_protocol"):
        reward_function("original", "json")


# ------------------------------------------------------------ in the workflow


def test_answer_is_training_asks_for_and_rewards_the_answer_is_form(tokenizer):
    """The protocol reaches the final prompt, the reward and the logged metrics."""
    import asyncio

    from areal.utils import stats_tracker

    from tests.builders import make_workflow
    from tests.fakes import FakeEngine

    right = {0, 2}

    def answer(ep):  # a box is no answer under answer_is
        return (
            "Therefore, the answer is River 7." if ep in right else "\\boxed{river 7}"
        )

    engine = FakeEngine(tokenizer, answer)
    wf = make_workflow(tokenizer, answer_protocol="answer_is")
    item = {
        "id": "q",
        "question": "Which river?",
        "context": "The river 7 flows north. " * 20,
        "answers": ["river 7"],
    }
    stats_tracker.get("rollout").export(reset=True)
    rows = asyncio.run(wf.arun_episode(engine, item))
    doc = asyncio.run(wf.read_document(item))
    prompt = tokenizer.decode(doc.final_prompt.build([]).tolist())
    assert "Therefore, the answer is" in prompt and "\\boxed" not in prompt
    stats = stats_tracker.get("rollout").export(reset=True)
    assert stats["rollout/memagent/reward"] == pytest.approx(0.5)  # episodes 0 and 2
    assert stats["rollout/memagent/final_boxed"] == pytest.approx(0.5)  # answer found
    advantages = {round(float(a), 6) for a in rows["rewards"]}
    assert advantages == {0.5, -0.5}  # R - mean(R), on every row of an episode

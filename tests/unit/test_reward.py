"""Answer extraction and the HotpotQA metrics."""

import pytest

from memagent_workflow.reward import (
    exact_match,
    extract_boxed,
    f1,
    normalize_answer,
    sub_em,
    train_reward,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("so \\boxed{Paris}.", "Paris"),
        ("\\boxed{a} then \\boxed{b}", "b"),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{x{y{z}}} tail", "x{y{z}}"),
        ("\\boxed{}", ""),
        ("no box here", None),
        ("\\boxed{unterminated", None),
        ("\\boxed{done} and \\boxed{open", "done"),
    ],
)
def test_extract_boxed_takes_last_complete_box(text, expected):
    assert extract_boxed(text) == expected


def test_normalize_answer_lowercases_and_strips_articles_punctuation_space():
    assert (
        normalize_answer("  The  Eiffel-Tower, in   PARIS! ") == "eiffeltower in paris"
    )
    assert normalize_answer("An apple a day") == "apple day"
    assert normalize_answer("theatre") == "theatre"  # article only as a word


def test_exact_match_is_max_over_golds():
    assert exact_match("the Paris", ["London", "paris"]) == 1.0
    assert exact_match("Paris, France", ["Paris"]) == 0.0
    assert exact_match("Paris", "paris") == 1.0


def test_sub_em_is_bidirectional_containment():
    assert sub_em("Paris, France", ["Paris"]) == 1.0  # gold inside prediction
    assert sub_em("Paris", ["Paris, France"]) == 1.0  # prediction inside gold
    assert sub_em("Lyon", ["Paris"]) == 0.0
    assert sub_em("", ["Paris"]) == 0.0
    assert sub_em("the", ["the Beatles"]) == 0.0  # normalises to empty


def test_f1_token_overlap_and_yes_no_guard():
    assert f1("Barack Obama", ["Obama"]) == pytest.approx(2 / 3)
    assert f1("Obama", ["Barack Obama", "Obama"]) == 1.0
    assert f1("yes", ["no"]) == 0.0
    assert f1("yes it is", ["yes"]) == 0.0  # special answers must match exactly
    assert f1("nothing shared", ["other words"]) == 0.0


def test_train_reward_is_strict_boxed_exact_match():
    assert train_reward("I think \\boxed{The Beatles}", ["Beatles"]) == 1.0
    assert train_reward("\\boxed{Beatles band}", ["Beatles"]) == 0.0  # sub-EM only
    assert train_reward("Beatles", ["Beatles"]) == 0.0  # no box
    assert train_reward("\\boxed{Lyon} \\boxed{Paris}", ["paris"]) == 1.0

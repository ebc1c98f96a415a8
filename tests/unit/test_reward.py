"""Answer extraction and the HotpotQA metrics."""

import pytest

from memagent_workflow.reward import (
    last_box,
    original_normalize,
    original_reward,
    reward_function,
    squad_reward,
)
from memagent_workflow.reward.squad import exact_match, f1, normalize_answer, sub_em


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
def test_last_box_takes_last_complete_box(text, expected):
    assert last_box(text) == expected


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


def test_squad_reward_is_boxed_exact_match_after_squad_normalisation():
    assert squad_reward("I think \\boxed{The Beatles}", ["Beatles"]) == 1.0
    assert squad_reward("\\boxed{Beatles band}", ["Beatles"]) == 0.0  # sub-EM only
    assert squad_reward("Beatles", ["Beatles"]) == 0.0  # no box
    assert squad_reward("\\boxed{Lyon} \\boxed{Paris}", ["paris"]) == 1.0


LONG_TAIL = " and that is my final answer" * 11  # 308 characters after the box

# (response, golds, original verifier, SQuAD-normalised boxed EM). The first
# rows are the disagreements measured against the original; the last rows are
# cases where both agree, so that neither variant passes by always saying 0 or 1.
REWARD_TABLE = [
    ("\\boxed{The Beatles}", ["Beatles"], 0.0, 1.0),  # article kept by the original
    ("\\boxed{St Louis}", ["St. Louis"], 0.0, 1.0),  # punctuation kept
    ("\\boxed{1,000}", ["1000"], 0.0, 1.0),
    ("\\boxed{Paris!}", ["Paris"], 0.0, 1.0),
    ("\\boxed{50\\%}", ["50%"], 0.0, 1.0),  # \\% removed, the bare % is not
    ("\\boxed{Paris}" + LONG_TAIL, ["Paris"], 0.0, 1.0),  # box outside the last 300
    ("\\boxed{NewYork}", ["New York"], 1.0, 0.0),  # all spaces removed
    ("\\boxed Paris", ["Paris"], 1.0, 0.0),  # space form
    ("so $\\boxed Paris$ it is", ["Paris"], 1.0, 0.0),  # space form ends at "$"
    ("\\boxed Rome. \\boxed{Paris}", ["Paris"], 0.0, 1.0),  # space form wins
    ("\\boxed{\\left(x\\right)}", ["(x)"], 1.0, 0.0),  # LaTeX tokens removed
    ("\\fbox{Paris}", ["Paris"], 0.0, 0.0),  # found by the original, never matched
    ("\\boxed{PARIS}", ["paris"], 1.0, 1.0),  # both fold case
    ("x" * 400 + " \\boxed{Paris}", ["Lyon", "Paris"], 1.0, 1.0),  # any gold
    ("\\boxed{Lyon}", ["Paris"], 0.0, 0.0),
    ("Paris", ["Paris"], 0.0, 0.0),  # no box at all
]


@pytest.mark.parametrize(
    "response, golds, original, squad",
    REWARD_TABLE,
    ids=[r[0][:30] for r in REWARD_TABLE],
)
def test_reward_table_original_and_squad(response, golds, original, squad):
    assert original_reward(response, golds) == original
    assert squad_reward(response, golds) == squad
    assert reward_function("original")(response, golds) == original
    assert reward_function("squad")(response, golds) == squad


def test_original_reward_reads_exactly_the_last_300_characters():
    box = "\\boxed{Paris}"
    assert original_reward(box + "." * (300 - len(box)), "Paris") == 1.0
    assert original_reward(box + "." * (301 - len(box)), "Paris") == 0.0


def test_original_box_brace_matching_and_normalisation():
    assert last_box("\\boxed{a{b}c} tail", original=True) == "a{b}c"
    assert last_box("\\boxed{open", original=True) is None
    assert last_box("\\boxedx{a}", original=True) is None  # not a \\boxed{...}
    assert last_box("\\boxed{a} \\boxed{b}", original=True) == "b"
    assert original_normalize("3 .5 \\dfrac{1}{2}\n^\\circ") == "30.5\\frac{1}{2}"


def test_unknown_reward_name_is_refused():
    with pytest.raises(ValueError, match="memagent.reward='exact'.*original"):
        reward_function("exact")


def test_the_original_window_counts_trailing_whitespace_as_generated():
    # the original verifier reads the last 300 characters of the reply as it is:
    # a box followed by 300 spaces is outside that window
    from memagent_workflow.reward import original_reward

    box = "\\boxed{Paris}"
    assert original_reward(box + " " * (300 - len(box)), ["Paris"]) == 1.0
    assert original_reward(box + " " * 300, ["Paris"]) == 0.0

"""GRPO advantages within a group (memagent_workflow.advantage)."""

import math

import pytest

from memagent_workflow.advantage import group_advantages


@pytest.mark.parametrize(
    "rewards, expected",
    [
        ([1.0, 0.0, 0.0, 1.0], [0.5, -0.5, -0.5, 0.5]),
        ([1.0, 0.0, 0.0], [2 / 3, -1 / 3, -1 / 3]),
        ([0.0, 0.0, 0.0, 1.0], [-0.25, -0.25, -0.25, 0.75]),
        ([0.5, 0.25, 1.0, 0.25], [0.0, -0.25, 0.5, -0.25]),
        ([3.0, -1.0], [2.0, -2.0]),
    ],
)
def test_advantage_is_reward_minus_group_mean(rewards, expected):
    assert group_advantages(rewards) == pytest.approx(expected, abs=1e-12)


def test_std_normalisation_divides_by_population_std_plus_eps():
    rewards = [1.0, 0.0, 0.0]
    std = math.sqrt(((2 / 3) ** 2 + 2 * (1 / 3) ** 2) / 3)  # ddof 0: sqrt(2) / 3
    assert std == pytest.approx(math.sqrt(2) / 3)
    for eps in (1e-6, 0.5):
        got = group_advantages(rewards, std_norm=True, eps=eps)
        want = [2 / 3 / (std + eps), -1 / 3 / (std + eps), -1 / 3 / (std + eps)]
        assert got == pytest.approx(want, rel=1e-12)
    # without std normalisation eps plays no part
    assert group_advantages(rewards, eps=0.5) == pytest.approx([2 / 3, -1 / 3, -1 / 3])


@pytest.mark.parametrize("std_norm", [False, True])
@pytest.mark.parametrize("rewards", [[0.0] * 4, [1.0] * 4, [0.1] * 7, [0.3] * 3, [1.0]])
def test_a_tied_group_gets_exact_zeros(rewards, std_norm):
    got = group_advantages(rewards, std_norm=std_norm)
    assert got == [0.0] * len(rewards)
    assert all(type(a) is float for a in got)


def test_no_episodes_give_no_advantages():
    assert group_advantages([]) == [] and group_advantages([], std_norm=True) == []


def test_advantages_sum_to_zero_and_keep_the_order():
    rewards = [0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0]
    adv = group_advantages(rewards)
    assert sum(adv) == pytest.approx(0.0, abs=1e-12)
    assert [a > 0 for a in adv] == [r == 1.0 for r in rewards]

"""The learning control (bench.controls): memory rows lose their own episode's advantage."""

import asyncio

import pytest
import torch

from bench.controls import ShuffledMemoryAdvantageWorkflow
from memagent_workflow.workflow import MemAgentWorkflow
from tests.builders import make_workflow
from tests.fakes import FakeEngine

CONTEXT = " ".join(f"Fact {i}: the river number {i} flows north." for i in range(30))
ITEM = {"id": "q1", "question": "Which river?", "context": CONTEXT, "answers": ["a"]}
GROUP = 4


def rows(cls, tokenizer, correct: set[int], group: int = GROUP):
    wf = make_workflow(tokenizer, cls=cls, group_size=group)
    answer = lambda ep: "\\boxed{a}" if ep in correct else "\\boxed{b}"  # noqa: E731
    traj = asyncio.run(wf.arun_episode(FakeEngine(tokenizer, answer), ITEM))
    per_episode = traj["input_ids"].shape[0] // group
    return traj["rewards"].view(group, per_episode)


@pytest.mark.parametrize("correct", [{0}, {1, 2}, {3}])
def test_memory_rows_get_another_episodes_advantage(tokenizer, correct):
    own = rows(MemAgentWorkflow, tokenizer, correct)
    for _ in range(5):  # the shift is random: every draw must hold
        shuffled = rows(ShuffledMemoryAdvantageWorkflow, tokenizer, correct)
        assert torch.equal(shuffled[:, -1], own[:, -1])  # final rows keep theirs
        memory = shuffled[:, :-1]
        assert (memory == memory[:, :1]).all()  # one advantage per episode
        # The group's advantages, moved between episodes.
        taken = memory[:, 0]
        assert sorted(taken.tolist()) == sorted(own[:, 0].tolist())


def test_no_memory_row_keeps_its_own_episodes_outcome(tokenizer):
    seen = set()
    for _ in range(12):
        taken = rows(ShuffledMemoryAdvantageWorkflow, tokenizer, {2})[:, 0]
        # Episode 2 alone answered right: its memory rows never get credit,
        # exactly one other episode's do.
        assert taken[2] < 0 and (taken > 0).sum() == 1
        seen.add(int(taken.argmax()))
    assert len(seen) > 1  # the receiving episode varies from group to group


def test_a_group_of_one_has_nothing_to_shuffle(tokenizer):
    shuffled = rows(ShuffledMemoryAdvantageWorkflow, tokenizer, {0}, group=1)
    assert (shuffled == 0).all()

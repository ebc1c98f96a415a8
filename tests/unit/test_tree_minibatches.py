"""The tree actor's update cuts its mini-batches as ``actor.tree_minibatches`` says.

AReaL's update (``PPOActor._ppo_update``) is replaced by a recorder: what the
test checks is which rows the project's actor hands it, mini-batch by
mini-batch (the cuts themselves: ``tests/unit/test_shared_prefix.py``).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from areal.trainer.ppo.actor import PPOActor

from bench.tree_rows import Shape, group_batch
from memagent_workflow.actor_config import MemAgentActorConfig
from memagent_workflow.trainer.tree_actor import SharesPrefixes

SHAPE = Shape(group=4, turns=3, instruction=12, chunk=40, memory=10, answer=6)
GROUPS = 4


class Base:
    def _prepare_mb_list(self, input_):  # the packing's counts: not under test
        raise AssertionError("not reached: _ppo_update is recorded")


class Actor(SharesPrefixes, Base):
    def __init__(self, cut: str):
        self.config = dataclasses.replace(
            MemAgentActorConfig(),
            enable_tree_training=True,
            ppo_n_minibatches=2,
            tree_minibatches=cut,
        )


def minibatch_groups(monkeypatch, cut: str) -> list[set[int]]:
    """The groups each of the update's mini-batches holds rows of."""
    seen: list[set[int]] = []
    monkeypatch.setattr(
        PPOActor,
        "_ppo_update",
        lambda self, data: seen.append(set(data["group"].tolist())),
    )
    data = []
    for g in range(GROUPS):
        batch = group_batch(SHAPE, "section_first", seed=g)
        batch["group"] = torch.full((batch["attention_mask"].shape[0],), g)
        data.append(batch)
    Actor(cut).ppo_update(data)
    return seen


@pytest.mark.parametrize("cut", ["dealt", "runs"])
def test_dealt_and_runs_put_every_group_in_each_minibatch(monkeypatch, cut):
    assert minibatch_groups(monkeypatch, cut) == [set(range(GROUPS))] * 2


def test_groups_cut_whole_groups(monkeypatch):
    first, second = minibatch_groups(monkeypatch, "groups")
    assert first | second == set(range(GROUPS)) and not first & second

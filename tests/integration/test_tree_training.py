"""AReaL's tree training on the project's actor, on CPU: the same numbers as packed.

Two actors (`StandinPPOActor`: the project's actor with the CPU's pack-aware
SDPA) load one tiny model: one packs rows (AReaL's default), one trains on
tries (``actor.enable_tree_training``; AReaL's FlexAttention with the trie's
block mask, run eagerly on CPU). One batch through both gives the same
per-token log-probs (``compute_logp``: the proximal and the reference pass),
and one PPO update (decoupled loss with its proximal log-probs, the KL loss
against ``ref_logp``, every row trained) the same loss and gradients, within
``ATOL``/``RTOL``: float32 sums in another order, nothing more. Needle rows and
paper-shaped rows (scaled down; the full tier: tests/e2e/test_tree_training_paper.py),
in both prompt orders.
"""

from __future__ import annotations

import pytest
import torch
from areal.utils import stats_tracker

from bench.tree_actor_setup import actor_config, batch_of, built_actor
from bench.tree_rows import Shape
from memagent_workflow.trainer.tree_actor import STAT_COMPUTED, STAT_ROWS
from standin.launch import find_free_port

ATOL = 2e-5  # log-probs and loss: float32, sums in another order
RTOL = 1e-3  # gradients, relative to each tensor's largest entry
NEEDLE = Shape(group=4, turns=2, instruction=6, chunk=8, memory=3, answer=2)
PAPER = Shape(group=8, turns=3, instruction=18, chunk=60, memory=12, answer=12)
# The paper-shaped rows run in the full tier (tests/e2e/test_tree_training_paper.py).
CASES = [(NEEDLE, order) for order in ("memory_first", "section_first")]
PADDINGS = ("block", "maximum")  # actor.tree_padding: the tries cut to 128, or 1,024


@pytest.fixture(scope="module")
def actors(tiny_model_dir):
    env = pytest.MonkeyPatch()
    for key, value in dict(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(find_free_port()),
        RANK="0",
        LOCAL_RANK="0",
        WORLD_SIZE="1",
    ).items():
        env.setenv(key, value)
    path = str(tiny_model_dir)
    built = [built_actor(actor_config(path, False))]
    built += [built_actor(actor_config(path, True, pad)) for pad in PADDINGS]
    yield built
    for actor in built:
        actor.destroy()
    env.undo()


def valid(data: dict[str, torch.Tensor]) -> torch.Tensor:
    """Positions with a next token in the row (the last one scores nothing)."""
    mask = data["attention_mask"].clone()
    ends = mask.sum(1) - 1
    mask[torch.arange(len(ends)), ends] = False
    return mask


def update(actor, data: dict[str, torch.Tensor]):
    """One PPO update; its loss, its gradients and its token counts."""
    batch = [{k: v.clone() for k, v in data.items()}]
    batch[0]["prox_logp"] = actor.compute_logp(batch)[0]
    batch[0]["ref_logp"] = batch[0]["prox_logp"] - 0.05  # a KL term to differentiate
    stats_tracker.export_all(reset=True)
    actor.ppo_update(actor.compute_advantages(batch))
    stats = stats_tracker.export_all(reset=True)
    grads = []
    for p in actor.model.parameters():
        if p.grad is None:  # frozen (LoRA's base)
            continue
        g = p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad
        grads.append(g.detach().clone())
    return stats, grads


def stat(stats: dict, name: str) -> float:
    return next(v for k, v in stats.items() if k.endswith(name))


@pytest.mark.parametrize("shape,order", CASES, ids=[o for _, o in CASES])
def test_tree_and_packed_give_the_same_logprobs_loss_and_gradients(
    actors, shape, order
):
    same_numbers(actors, shape, order)


def same_numbers(actors, shape: Shape, order: str, data=None) -> None:
    """One batch through the packed actor and each tree actor: log-probs, loss,
    KL loss, gradients, counts."""
    packed, *trees = actors
    data = batch_of(shape, order) if data is None else data
    computed = [same_as_packed(packed, tree, data) for tree in trees]
    # padded to the block, the tries computed fewer positions than to the maximum
    assert computed[0] < computed[1]
    assert computed[1] % 1024 == 0 and computed[0] % 128 == 0


def same_as_packed(packed, tree, data: dict[str, torch.Tensor]) -> float:
    """``tree``'s numbers are ``packed``'s; the positions its update computed."""
    mask = valid(data)
    a = packed.compute_logp([dict(data)])[0]
    b = tree.compute_logp([dict(data)])[0]
    assert (a - b)[mask].abs().max() < ATOL

    stats_a, grads_a = update(packed, data)
    stats_b, grads_b = update(tree, data)
    for name in ("actor_loss/avg", "kl_loss/avg"):
        assert abs(stat(stats_a, name) - stat(stats_b, name)) < ATOL, name
    assert stat(stats_a, "kl_loss/avg") > 1e-3  # the KL term was there
    for ga, gb in zip(grads_a, grads_b, strict=True):
        scale = max(float(ga.abs().max()), 1e-12)
        assert float((ga - gb).abs().max()) <= RTOL * scale
    assert any(float(g.abs().max()) > 0 for g in grads_a)

    # every row trained: both count the batch's tokens; the tree computed fewer
    # than its rows hold (padding to 1,024 included), the packed pass all of them
    rows = int(data["attention_mask"].sum())
    assert stat(stats_a, STAT_ROWS) == stat(stats_b, STAT_ROWS) == rows
    assert stat(stats_a, STAT_COMPUTED) >= rows
    return stat(stats_b, STAT_COMPUTED)


def test_identical_rows_each_count_as_packed(actors):
    """Episodes that wrote the same memory give identical rows (common in the
    needle task): each is still its own row in the loss."""
    data = batch_of(NEEDLE, "section_first")
    for key in ("input_ids", "attention_mask", "loss_mask", "logprobs", "versions"):
        data[key][1] = data[key][0]
        data[key][2] = data[key][0]
    same_numbers(actors, NEEDLE, "section_first", data)

"""tests/integration/test_tree_training.py's equivalence on paper-shaped rows
(scaled down: 8 episodes, 3 memory turns of a 60-token section), both prompt
orders, and with LoRA: the same log-probs, loss and gradients packed and on tries."""

from __future__ import annotations

import pytest

from tests.integration.test_tree_training import PADDINGS, PAPER, actors, same_numbers

__all__ = ["actors"]  # the module's fixture, shared


@pytest.mark.parametrize("order", ["memory_first", "section_first"])
def test_paper_shaped_rows_give_the_same_numbers_on_tries(actors, order):
    same_numbers(actors, PAPER, order)


@pytest.fixture(scope="module")
def lora_actors(tiny_model_dir):
    """The packed and the tree actors with a LoRA adapter each, drawn from one
    seed (PEFT draws lora_A at random; lora_B starts at 0)."""
    from bench.tree_actor_setup import actor_config, built_actor

    built = []
    for tree, padding in [(False, "block"), *((True, p) for p in PADDINGS)]:
        config = actor_config(str(tiny_model_dir), tree, padding)
        config.use_lora, config.lora_rank, config.lora_alpha = True, 4, 8
        config.target_modules = ["all-linear"]
        built.append(built_actor(config))
    yield built
    for actor in built:
        actor.destroy()


def test_lora_trains_the_same_on_tries(actors, lora_actors):  # actors: the env
    from tests.integration.test_tree_training import NEEDLE

    same_numbers(lora_actors, NEEDLE, "section_first")

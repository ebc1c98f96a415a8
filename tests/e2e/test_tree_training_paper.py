"""tests/integration/test_tree_training.py's equivalence on paper-shaped rows
(scaled down: 8 episodes, 3 memory turns of a 60-token section), both prompt
orders: the same log-probs, loss and gradients packed and on tries."""

from __future__ import annotations

import pytest

from tests.integration.test_tree_training import PAPER, actors, same_numbers

__all__ = ["actors"]  # the module's fixture, shared


@pytest.mark.parametrize("order", ["memory_first", "section_first"])
def test_paper_shaped_rows_give_the_same_numbers_on_tries(actors, order):
    same_numbers(actors, PAPER, order)

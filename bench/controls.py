"""Controls for the learning benchmark and test: training that must *not* learn.

``ShuffledMemoryAdvantageWorkflow`` is MemAgent with one thing broken: every
memory row gets the advantage of a *different* episode of the same group
(the final row keeps its own). The advantages keep their values, their group
mean and their spread; only the pairing of a memory turn with its own
episode's outcome is gone, so the memory cannot learn what the answer needs.
For the benchmark and the test only: never a training option.
"""

from __future__ import annotations

import random

from memagent_workflow.workflow import Episode, MemAgentWorkflow


class ShuffledMemoryAdvantageWorkflow(MemAgentWorkflow):
    """Memory rows take the advantage of another episode of their group."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rng = random.Random()

    def row_advantages(
        self, episodes: list[Episode], advantages: list[float]
    ) -> list[float]:
        n = len(episodes)
        if n < 2:  # a lone episode's advantage is 0 anyway
            return super().row_advantages(episodes, advantages)
        # A cyclic shift by 1..n-1 moves every episode's advantage elsewhere.
        shift = self.rng.randrange(1, n)
        rows = []
        for i, episode in enumerate(episodes):
            memory_turns = len(episode.turns) - 1
            rows += [advantages[(i + shift) % n]] * memory_turns + [advantages[i]]
        return rows

"""Question mixes for the rollout benchmarks: how many chunks each document has."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from bench.common import item
from bench.corpus import build_context


@dataclass(frozen=True)
class Mix:
    """Chunk counts drawn in equal shares, in a seeded shuffled order."""

    name: str
    chunk_counts: tuple[int, ...]

    def counts(self, questions: int, seed: int) -> list[int]:
        out = [self.chunk_counts[q % len(self.chunk_counts)] for q in range(questions)]
        random.Random(seed).shuffle(out)
        return out

    def describe(self) -> str:
        lo, hi = min(self.chunk_counts), max(self.chunk_counts)
        return f"{self.name} ({lo}-{hi} chunks)"


# The paper trains on ~30K-token contexts (5000-token chunks, config max_chunks 8);
# the replay used 6-9 chunks.
TRAINING = Mix("training mix", (6, 7, 8, 9))
# Longer documents in training, short enough for a loop-level run to stay short.
LONG = Mix("long-document mix", (2, 4, 8, 16, 32))
# RULER-HQA's lengths (50 to 6,400 documents), as chunks of the benchmark's size.
RULER = Mix("RULER-like mix", (2, 4, 8, 16, 32, 64, 128, 256))


def make_items(
    counts: list[int], chunk_tokens: int, tokens_per_char: float, prefix: str = "q"
) -> list[dict[str, Any]]:
    """One question per count, its context exactly that many chunks long."""
    return [
        item(
            f"{prefix}{q}",
            build_context(n * chunk_tokens - 8, tokens_per_char, seed=1000 + q),
        )
        for q, n in enumerate(counts)
    ]

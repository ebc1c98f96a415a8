"""GRPO advantage of an episode within its group."""

from __future__ import annotations

import math
from collections.abc import Sequence


def group_advantages(
    rewards: Sequence[float], std_norm: bool = False, eps: float = 1e-6
) -> list[float]:
    """A_i = R_i - mean(R), optionally divided by (std(R) + eps).

    The default (no std) is the Dr. GRPO form MemAgent trains with. A group whose
    rewards all tie gets exact zeros, never NaN.
    """
    if not rewards:
        return []
    mean = sum(rewards) / len(rewards)
    centred = [r - mean for r in rewards]
    if all(abs(c) < 1e-12 for c in centred):
        return [0.0] * len(rewards)
    if std_norm:
        std = math.sqrt(sum(c * c for c in centred) / len(centred))
        centred = [c / (std + eps) for c in centred]
    return centred

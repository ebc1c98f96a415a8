"""The simulated train step: a sleep that grows with the rows and tokens consumed.

A PPO step on the actor (proximal logprobs, reference logprobs, forward and
backward over every row) costs about the same per token whatever the row, plus
a little per row (packing, per-sequence bookkeeping) and a fixed part
(optimizer step, weight update). The model is

    T(batch) = ratio x R x (fixed + per_row x rows / rows_ref + per_token x tokens / tokens_ref)

where ``rows_ref`` / ``tokens_ref`` are the mean rows and tokens of a training
batch of the workload and ``R`` is the mean time the synchronous loop spends
rolling out one batch, both taken from a dry run of the same questions (see
:func:`calibrate`). So at ``ratio`` 1 the trainer needs, for the mean batch,
exactly as long as the synchronous rollout of that batch; a batch with more
rows or tokens takes proportionally longer.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TrainCost:
    """Shares of the mean train step: fixed, per row and per token (sum to 1)."""

    fixed: float = 0.1
    per_row: float = 0.1
    per_token: float = 0.8

    def __post_init__(self) -> None:
        if abs(self.fixed + self.per_row + self.per_token - 1) > 1e-9:
            raise ValueError(f"train cost shares must sum to 1, got {self}")


@dataclass(frozen=True)
class Calibration:
    """What one unit of ``ratio`` means for a workload."""

    rollout_s: float  # mean synchronous rollout of one batch (zero driver cost)
    rows: float  # mean rows of one batch
    tokens: float  # mean tokens (prompt + output, every row) of one batch


def calibrate(
    rollout_s: list[float], rows: list[int], tokens: list[int]
) -> Calibration:
    """Means over the batches of a dry run."""
    if not rollout_s or not (len(rollout_s) == len(rows) == len(tokens)):
        raise ValueError(
            "calibration needs one rollout time, row and token count per batch"
        )
    return Calibration(
        statistics.mean(rollout_s), statistics.mean(rows), statistics.mean(tokens)
    )


def batch_size(trajectories: list[dict[str, Any]]) -> tuple[int, int]:
    """Rows and tokens (attention mask) of a training batch of trajectories."""
    rows = sum(int(t["input_ids"].shape[0]) for t in trajectories)
    tokens = sum(int(t["attention_mask"].sum()) for t in trajectories)
    return rows, tokens


def train_seconds(
    model: TrainCost, calib: Calibration, ratio: float, rows: int, tokens: int
) -> float:
    """Simulated duration of a train step over ``rows`` rows of ``tokens`` tokens."""
    units = (
        model.fixed
        + model.per_row * rows / calib.rows
        + model.per_token * tokens / calib.tokens
    )
    return ratio * calib.rollout_s * units

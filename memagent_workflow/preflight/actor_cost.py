"""The actor's cost per pass as a fixed part plus a per-token part, and the
step's other work, from what the smoke measured.

A small batch's pass time is mostly fixed cost (the controller's call to the
workers, the batch sent and gathered, the optimizer step): read as a rate
alone, it is scaled with the tokens and misstates a full step. The smoke
times step 2's logprob pass on its batch and again on that batch ``k`` times
over (`fit_fixed`, ``k`` = `REPEAT`): the difference is the per-token part of
``(k - 1) T`` tokens, the rest the fixed part, taken as the same for the
update's call. A small ``k`` (2) leaves both sizes within the timer's noise
on CPU, where a pass on a smoke's batch takes some 50 ms: the fit swung from
no fixed part to nearly all of it between two runs. Measured tokens per
row (``row_tokens``) count a step's tokens in place of the fullest turn's
bound.

The update cannot be repeated (it moves the weights), and on the smoke's batch
its per-token part is within the timer's noise: taken as the measured time less
the logprob pass's fixed part, it was half the update's time on 306 tokens and
projected the CPU main job's update 50% high. So the update's per-token part is
the logprob pass's times the forward passes' worth of FLOPs an update token
costs (`update_split`: 3, forward and backward; the preflight's own count,
``step.update_passes``; measured on CPU 3.0); the rest of its measured time is
its fixed part (``actor_update_fixed_s``: its mini-batches' calls, the optimizer
steps). ``step_other_s`` is the rest of a measured step (advantages, the
controller's bookkeeping): its wall time less the rollout's wait, the actor's
passes, the weight update and the checkpoints (`step_other`).
"""

from __future__ import annotations

MAX_FIXED_SHARE = 0.9  # of the measured pass: some of it is always per token
REPEAT = 16  # the repeated logprob pass's batch, in step 2's batches


def fit_fixed(
    single_s: float | None, repeated_s: float | None, times: int = REPEAT
) -> float | None:
    """Fixed seconds of one pass from its time on ``T`` and on ``times x T``
    tokens (``(times x single - repeated) / (times - 1)``), within
    [0, 0.9 x single]; None unmeasured."""
    if single_s is None or repeated_s is None or times < 2:
        return None
    fixed = (times * single_s - repeated_s) / (times - 1)
    return min(max(0.0, fixed), MAX_FIXED_SHARE * single_s)


def per_token_rate(
    tokens: float | None, seconds: float | None, fixed_s: float | None, gpus: int
) -> float | None:
    """Tokens/s per GPU of a pass's per-token part (its time less the fixed)."""
    if tokens is None or not seconds:
        return None
    fixed = min(fixed_s or 0.0, MAX_FIXED_SHARE * seconds)
    return tokens / ((seconds - fixed) * max(1, gpus))


def update_split(
    tokens: float | None,
    update_s: float | None,
    logp_rate: float | None,
    passes: int,
    gpus: int,
) -> tuple[float, float] | None:
    """The update's per-token rate (tokens/s per GPU: the logprob pass's per-token
    rate over ``passes``) and its fixed seconds (its measured time less that
    part, >= 0); None unmeasured."""
    if not tokens or update_s is None or not logp_rate:
        return None
    rate = logp_rate / passes
    return rate, max(0.0, update_s - tokens / (rate * max(1, gpus)))


def step_other(wall_s: float | None, timed_s: list[float | None]) -> float | None:
    """A step's time outside its timed phases (None unmeasured, >= 0)."""
    if wall_s is None:
        return None
    return max(0.0, wall_s - sum(t for t in timed_s if t is not None))


def step_tokens(rows: int, bound: int, row_tokens: float | None) -> float:
    """A step's tokens: rows at the measured tokens per row, else at the
    fullest turn's ``bound``."""
    return rows * (row_tokens if row_tokens else bound)

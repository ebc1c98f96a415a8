"""How far AReaL's proximal log-probability approximations are from the truth.

With ``actor.prox_logp_method: metrics`` AReaL 1.0.4 recomputes the proximal
log-probabilities and logs, per approximation method (``linear``, ``loglinear``,
``rollout``), its error against them under
``ppo_actor/update/compute_logp/{method}/…``. `approx_errors` picks the step
line's share of it: the mean and largest absolute error of the log-probability
and the mean absolute error of the two importance weights it feeds
(π_prox/π_behave and π_θ/π_prox).
"""

from __future__ import annotations

from typing import Any

PREFIX = "ppo_actor/update/compute_logp/"
FIELDS = {
    "abs_error/avg": "logp_abs_err",
    "abs_error/max": "logp_abs_err_max",
    "behave_imp_weight_abs_error/avg": "behave_weight_abs_err",
    "importance_weight_abs_error/avg": "weight_abs_err",
}


def approx_errors(stats: dict[str, Any]) -> dict[str, dict[str, float]] | None:
    """``{method: {field: value}}`` from a step's exported stats; None when the
    step logged no approximation error (any method other than ``metrics``)."""
    out: dict[str, dict[str, float]] = {}
    for key, value in stats.items():
        if not key.startswith(PREFIX):
            continue
        method, _, stat = key[len(PREFIX) :].partition("/")
        if stat in FIELDS:
            out.setdefault(method, {})[FIELDS[stat]] = float(value)
    return out or None

"""The rates the step model runs on, each with where it came from.

Measured rates come from ``examples/smoke.py``'s JSON (its ``rates`` section,
given to the preflight as ``--measured FILE``); a rate the file does not hold
is the preflight's constant or the user's flag, and the estimate says which.
Nothing measured is ever replaced: a flag given for a rate the file holds is
refused, so two numbers for one rate cannot both be meant.

``decode_tokens_per_s``: tokens per second one request decodes, in a batch of
``decode_batch`` turns on one server. ``prefill_tokens_per_s``: prompt tokens
per second one server prefills, all its turns together (not counted without a
measurement). ``actor_train_tokens_per_s`` and ``actor_logp_tokens_per_s``:
tokens per second per actor GPU through the update (forward and backward) and
through one log-probability pass (without a measurement: the model's FLOPs at
``--train-tflops``). ``weight_update_s``: one weight update, actor to every
server (not counted without a measurement). ``actor_fixed_s``,
``actor_update_fixed_s``, ``actor_row_tokens`` and ``step_other_s``: the actor's
fixed cost per logprob pass and per update, tokens per row and a step's other
work (``actor_cost``; not counted, or the fullest turn's tokens, without a
measurement). ``train_tflops``: the update's
achieved TFLOP/s per GPU, counted as the step model counts FLOPs (for any model:
it replaces ``--train-tflops`` where the actor's tokens/s are not measured).

The actor's and the servers' rates are the measured model's: a file whose
``model`` is not the run's (``actor.path``, compared by its last part) is
refused.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The preflight's constants, used where nothing was measured.
DECODE_TOKENS_PER_S = 20.0  # one request in a full batch
# Training TFLOP/s per GPU: MemAgent issue #31's 7B update on 32 H100s (2,100 s),
# counted as memagent_workflow/preflight/step.py counts FLOPs.
TRAIN_TFLOPS = 120.0

MEASURED = {
    "decode_tokens_per_s": "tokens/s one request decodes (per server batch)",
    "prefill_tokens_per_s": "prompt tokens/s one server prefills",
    "actor_train_tokens_per_s": "tokens/s per actor GPU through the update",
    "actor_logp_tokens_per_s": "tokens/s per actor GPU through one logprob pass",
    "weight_update_s": "seconds of one weight update",
    "train_tflops": "TFLOP/s per actor GPU in the update, as the step model counts",
    # The fixed and per-step costs (preflight/actor_cost.py).
    "actor_fixed_s": "fixed seconds of one actor pass, whatever its tokens",
    "actor_update_fixed_s": "fixed seconds of the update, whatever its tokens",
    "actor_row_tokens": "tokens per trained row (counts a step's tokens)",
    "step_other_s": "seconds of a step outside its rollout, actor and weight sync",
    # preflight/tree_ratio.py: a tree-training run's actor_tokens_computed / _rows
    "tree_token_share": "share of the row tokens the actor computes (tree training)",
}
# Costs the smoke may measure as nothing (a fit with no fixed part).
MAY_BE_ZERO = ("actor_fixed_s", "actor_update_fixed_s", "step_other_s")
# Context the smoke records beside the rates (shown, never computed with).
CONTEXT = ("decode_batch", "prompt_tokens", "row_tokens", "model", "device", "at")


class MeasuredFileError(ValueError):
    """A measured-rates file that cannot be used: names the file and the field."""


@dataclass(frozen=True)
class Measured:
    """The ``rates`` section of a smoke's JSON."""

    path: str
    rates: dict[str, float]
    context: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        where = ", ".join(
            str(self.context[k]) for k in ("device", "model") if self.context.get(k)
        )
        return f"measured: {self.path}" + (f" ({where})" if where else "")


def read_measured(path: str | Path) -> Measured:
    """The file's rates, checked: every rate a positive number, no unknown key."""
    path = str(path)
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise MeasuredFileError(
            f"{path}: no such file (examples/smoke.py writes it)"
        ) from None
    except (OSError, json.JSONDecodeError) as exc:
        raise MeasuredFileError(f"{path}: not a JSON file ({exc})") from None
    section = data.get("rates") if isinstance(data, dict) else None
    if not isinstance(section, dict):
        raise MeasuredFileError(f"{path}: no 'rates' object (examples/smoke.py's JSON)")
    rates: dict[str, float] = {}
    context: dict[str, Any] = {}
    for key, value in section.items():
        if key in CONTEXT:
            context[key] = value
            continue
        if key not in MEASURED:
            raise MeasuredFileError(
                f"{path}: rates.{key}: unknown rate (known: {', '.join(MEASURED)})"
            )
        if value is None:  # the smoke could not measure it: say so, use no number
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise MeasuredFileError(f"{path}: rates.{key}: {value!r} is not a number")
        if key in MAY_BE_ZERO and math.isfinite(value) and value == 0:
            pass  # measured as nothing: a number, counted as 0
        elif not math.isfinite(value) or value <= 0:
            raise MeasuredFileError(f"{path}: rates.{key}: {value!r} is not > 0")
        rates[key] = float(value)
    if not rates:
        raise MeasuredFileError(f"{path}: rates: no rate measured")
    return Measured(path, rates, context)


def check_model(measured: Measured, model_path: str) -> None:
    """Refuse rates measured on another model than the run's."""
    said = measured.context.get("model")
    if said and Path(str(said).rstrip("/")).name != Path(model_path.rstrip("/")).name:
        raise MeasuredFileError(
            f"{measured.path}: rates.model {said} is not this run's actor.path "
            f"{model_path}: its rates are that model's (measure this one with "
            "examples/smoke.py)"
        )


@dataclass(frozen=True)
class Rate:
    """One number the step model uses, and where it came from."""

    value: float | None  # None: not counted
    source: str

    @property
    def note(self) -> str:
        """What an estimate says beside the number: "" for the plain default."""
        if self.source.startswith("measured:"):
            return " (measured)"
        return "" if self.source.startswith("default") else f" ({self.source})"


def pick(
    measured: Measured | None,
    key: str,
    flag: float | None,
    flag_name: str,
    constant: float | None,
    constant_name: str,
) -> Rate:
    """The measured rate, else the flag's, else the constant (None: not counted)."""
    if measured is not None and key in measured.rates:
        if flag is not None:
            raise MeasuredFileError(
                f"{measured.path}: rates.{key} is measured and {flag_name} "
                f"{flag:g} was given too: drop one"
            )
        return Rate(measured.rates[key], measured.label)
    if flag is not None:
        return Rate(flag, flag_name)
    missing = f"not in {measured.path}: " if measured is not None else ""
    return Rate(constant, missing + constant_name)


@dataclass(frozen=True)
class StepRates:
    """Every rate of the step model (``Options`` and a measured file)."""

    decode: Rate  # tokens/s per request
    prefill: Rate  # prompt tokens/s per server; None: not counted
    actor_train: Rate  # tokens/s per actor GPU; None: from FLOPs at tflops
    actor_logp: Rate
    tflops: Rate
    weight_update: Rate  # seconds; None: not counted
    actor_fixed: Rate = Rate(None, "not counted")  # seconds per actor pass
    update_fixed: Rate = Rate(None, "not counted")  # seconds per update
    row_tokens: Rate = Rate(None, "the fullest turn's")  # tokens per row
    step_other: Rate = Rate(None, "not counted")  # seconds per step


def step_rates(options: Any) -> StepRates:
    """The rates for ``options`` (``preflight.Options``)."""
    m: Measured | None = options.measured
    return StepRates(
        decode=pick(
            m, "decode_tokens_per_s", options.decode_tokens_per_s,
            "--decode-tokens-per-s", DECODE_TOKENS_PER_S,
            f"default {DECODE_TOKENS_PER_S:g} tokens/s",
        ),
        prefill=pick(
            m, "prefill_tokens_per_s", None, "", None, "prefill not counted"
        ),
        actor_train=pick(
            m, "actor_train_tokens_per_s", None, "", None, "from FLOPs"
        ),
        actor_logp=pick(m, "actor_logp_tokens_per_s", None, "", None, "from FLOPs"),
        tflops=pick(
            m, "train_tflops", options.train_tflops, "--train-tflops", TRAIN_TFLOPS,
            f"default {TRAIN_TFLOPS:g} TFLOP/s",
        ),
        weight_update=pick(
            m, "weight_update_s", None, "", None, "weight sync not counted"
        ),
        actor_fixed=pick(m, "actor_fixed_s", None, "", None, "not counted"),
        update_fixed=pick(m, "actor_update_fixed_s", None, "", None, "not counted"),
        row_tokens=pick(m, "actor_row_tokens", None, "", None, "the fullest turn's"),
        step_other=pick(m, "step_other_s", None, "", None, "not counted"),
    )  # fmt: skip


def sources(rates: StepRates) -> str:
    """Where each rate of the step model came from, on one line."""
    named = {
        "decode": rates.decode,
        "prefill": rates.prefill,
        "actor update": rates.actor_train,
        "actor logprob pass": rates.actor_logp,
        "weight sync": rates.weight_update,
    }
    if None in (rates.actor_train.value, rates.actor_logp.value):
        named["actor TFLOP/s"] = rates.tflops
    for name, rate in (
        ("actor fixed cost", rates.actor_fixed),
        ("update fixed cost", rates.update_fixed),
        ("tokens per row", rates.row_tokens),
        ("a step's other work", rates.step_other),
    ):
        if rate.value is not None:  # shown where measured only
            named[name] = rate
    by_source: dict[str, list[str]] = {}
    for name, rate in named.items():
        by_source.setdefault(rate.source, []).append(name)
    return "rates: " + "; ".join(
        f"{', '.join(names)}: {source}" for source, names in by_source.items()
    )

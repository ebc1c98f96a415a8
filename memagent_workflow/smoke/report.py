"""What the smoke measured: the phase table, the rates the step model takes
(``preflight.rates``: the JSON's ``rates`` section is what ``examples/
preflight.py --measured`` reads), and each role's peak GPU memory beside the
preflight's estimate.

Rates are taken from the second training step (the first pays for warm-up:
kernels compiled, caches filled): its trained tokens (``steps.jsonl``'s
``tokens`` less ``tokens_skipped``) over its ``actor step`` and ``logprob
pass`` (else ``ref logprob pass``) per actor GPU, and its ``weight update``;
prefill and decode are the servers' bench (`bench`), averaged over servers. A
rate whose phase did not run is ``null``, never a stand-in number.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memagent_workflow.preflight.actor_cost import (
    REPEAT,
    fit_fixed,
    per_token_rate,
    step_other,
    update_split,
)
from memagent_workflow.smoke.events import Event

RATE_STEP = 2
DOUBLED = f"logprob pass x{REPEAT}"  # step 2's logprob pass on its batch REPEAT x
# Step 2's phases timed apart; the rest of its wall time is its other work.
STEP_PHASES = (
    "rollout", "ref logprob pass", "logprob pass", DOUBLED, "actor step",
    "weight update", "save", "recover checkpoint",
)  # fmt: skip


@dataclass
class Memory:
    """One role's measured peak and the preflight's estimate (bytes)."""

    role: str
    peak: int | None
    estimate: dict[str, int] = field(default_factory=dict)


def phase_rows(events: list[Event]) -> list[dict[str, Any]]:
    """One row per finished phase run, in the order they ran."""
    repeats: dict[tuple[str, str], int] = {}
    for e in events:
        if e.event == "end":
            repeats[(e.run, e.phase)] = max(repeats.get((e.run, e.phase), 0), e.n)
    rows = []
    for e in events:
        if e.event != "end":
            continue
        label = e.phase
        if e.phase == "rollout" and e.n == 1:
            label = "first rollout"
        elif repeats[(e.run, e.phase)] > 1:
            label = f"{e.phase} (step {e.n})"
        rows.append({"run": e.run, "phase": label, "n": e.n, "seconds": e.seconds})
    return rows


def seconds_of(
    events: list[Event], phase: str, n: int, run: str = "train"
) -> float | None:
    for e in events:
        if (e.run, e.phase, e.event, e.n) == (run, phase, "end", n):
            return e.seconds
    return None


def slower_weight_update(events: list[Event]) -> float | None:
    """The slower of steps 1 and 2's weight updates. Through disk, AReaL's
    servers wait for the saved weights' name-resolve entry, looked for once a
    second (``name_resolve.wait``): an update takes its transfer, or that plus up
    to a second when the first look comes before the save ends, as on most of the
    CPU main job's steps (1.1 s; 0.06-0.3 s on 1 in 12). One step's update can
    land on either."""
    step = seconds_of(events, "weight update", RATE_STEP)
    if step is None:  # the rate step's update did not run: not measured
        return None
    earlier = [seconds_of(events, "weight update", n) for n in range(1, RATE_STEP)]
    return max([step, *(s for s in earlier if s is not None)])


def servers_of(events: list[Event]) -> list[dict[str, Any]]:
    for e in events:
        if e.phase == "server bench" and e.event == "end":
            return list(e.detail.get("servers", []))
    return []


def step_line(steps_path: Path, step: int = RATE_STEP) -> dict[str, Any] | None:
    try:
        lines = steps_path.read_text().splitlines()
    except FileNotFoundError:
        return None
    found = [json.loads(line) for line in lines if line.strip()]
    return next((s for s in found if s.get("step") == step), None)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _per(numer: float | None, denom: float | None) -> float | None:
    if numer is None or not denom:
        return None
    return numer / denom


def step_wall(steps_path: Path, step: int = RATE_STEP) -> float | None:
    """Step ``step``'s wall time: its ``elapsed_s`` less the previous step's."""
    this, before = step_line(steps_path, step), step_line(steps_path, step - 1)
    if this is None or before is None or "elapsed_s" not in this:
        return None
    return this["elapsed_s"] - before.get("elapsed_s", 0.0)


def rows_warning(steps_path: Path, actor_ranks: int) -> str | None:
    """A warning when step 2 had fewer rows than the actor has data-parallel
    ranks: some ranks then trained nothing, and its rates understate them."""
    line = step_line(steps_path)
    rows = line.get("rows") if line else None
    if rows is None or rows >= actor_ranks:
        return None
    return (
        f"step {RATE_STEP} had {rows} rows for {actor_ranks} actor data-parallel "
        "ranks: some ranks had none, and the actor's rates understate the run's "
        "(give more --groups)"
    )


def rates_of(
    events: list[Event],
    steps_path: Path,
    actor_gpus: int,
    context: dict[str, Any],
    update_passes: int,
) -> dict[str, Any]:
    """The ``rates`` section (``None`` where its phase did not run). The actor's
    rates are its passes' per-token parts once the fixed part is fitted from the
    doubled logprob pass; the update's per-token part is the logprob pass's times
    ``update_passes`` (forward passes' worth of an update token), the rest of it
    fixed (preflight/actor_cost.py)."""
    servers = servers_of(events)
    line = step_line(steps_path)
    tokens = rows = None
    if line is not None:
        tokens = (line.get("tokens") or 0) - (line.get("tokens_skipped") or 0)
        rows = line.get("rows")
    gpus = max(1, actor_gpus)
    logp = seconds_of(events, "logprob pass", RATE_STEP)
    fixed = fit_fixed(logp, seconds_of(events, DOUBLED, 1))
    if logp is None:
        logp = seconds_of(events, "ref logprob pass", RATE_STEP)
    train = seconds_of(events, "actor step", RATE_STEP)
    logp_rate = per_token_rate(tokens, logp, fixed, gpus)
    train_rate, update_fixed = per_token_rate(tokens, train, fixed, gpus), None
    if fixed is not None and (
        split := update_split(tokens, train, logp_rate, update_passes, gpus)
    ):
        train_rate, update_fixed = split
    timed = [seconds_of(events, phase, RATE_STEP) for phase in STEP_PHASES]
    timed[STEP_PHASES.index(DOUBLED)] = seconds_of(events, DOUBLED, 1)
    return {
        "decode_tokens_per_s": _mean([s["decode_tokens_per_s"] for s in servers]),
        "prefill_tokens_per_s": _mean([s["prefill_tokens_per_s"] for s in servers]),
        "actor_train_tokens_per_s": train_rate,
        "actor_logp_tokens_per_s": logp_rate,
        "weight_update_s": slower_weight_update(events),
        "actor_fixed_s": fixed,
        "actor_update_fixed_s": update_fixed,
        "actor_row_tokens": _per(tokens, rows) if train else None,
        "step_other_s": step_other(step_wall(steps_path), timed) if train else None,
        "decode_batch": servers[0]["turns"] if servers else None,
        "prompt_tokens": servers[0]["prompt_tokens"] if servers else None,
        "row_tokens": _per(tokens, rows),
        **context,
    }


def _gib(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 2**30:.1f} GiB"


def _num(value: float | None, unit: str) -> str:
    if value is None:
        return "not measured"
    if value < 1:
        return f"{value:.2f} {unit}"
    return f"{value:,.1f} {unit}" if value < 100 else f"{value:,.0f} {unit}"


RATE_UNITS = {
    "decode_tokens_per_s": "tokens/s per request",
    "prefill_tokens_per_s": "tokens/s per server",
    "actor_train_tokens_per_s": "tokens/s per actor GPU (update)",
    "actor_logp_tokens_per_s": "tokens/s per actor GPU (logprob pass)",
    "weight_update_s": "s per weight update",
    "actor_fixed_s": f"s per actor pass, fixed (logprob pass on 1x and {REPEAT}x rows)",
    "actor_update_fixed_s": "s per update, fixed (its time less its per-token part)",
    "actor_row_tokens": "tokens per row",
    "step_other_s": "s per step besides rollout, actor, weight update, saves",
}


def table(
    rows: list[dict[str, Any]],
    rates: dict[str, Any],
    memory: list[Memory],
    failure: dict[str, str] | None,
) -> str:
    """The phase table, the rates and the memory, as the terminal shows them."""
    width = max([len(r["phase"]) for r in rows] + [len("phase")])
    lines = [
        f"{'phase'.ljust(width)} | run    | seconds",
        f"{'-' * width}-+--------+--------",
    ]
    for r in rows:
        lines.append(
            f"{r['phase'].ljust(width)} | {r['run'].ljust(6)} | {r['seconds']:8.1f}"
        )
    if failure is not None:
        lines.append(f"{failure['phase'].ljust(width)} | FAILED | {failure['cause']}")
    lines.append("")
    for key, unit in RATE_UNITS.items():
        lines.append(f"{key}: {_num(rates.get(key), unit)}")
    if rates.get("decode_batch"):
        lines.append(
            f"  (bench: {rates['decode_batch']} turns at once per server, prompts "
            f"of {rates['prompt_tokens']} tokens)"
        )
    for m in memory:
        est = ", ".join(f"{k} {_gib(v)}" for k, v in m.estimate.items()) or "none"
        lines.append(f"peak GPU memory, {m.role}: {_gib(m.peak)} (preflight: {est})")
    if not memory:
        lines.append("peak GPU memory: not measured (no nvidia-smi: no GPU)")
    return "\n".join(lines)


def write_json(path: Path, report: dict[str, Any]) -> None:
    """The report, written whole (a temporary file renamed)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(report, indent=2, default=str) + "\n")
    tmp.replace(path)

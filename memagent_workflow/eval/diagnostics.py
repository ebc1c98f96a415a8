"""Where the memory caught, kept or lost the answer: one length's split, from traces.

For the samples of a results file that have a trace (MemAgent mode with
``eval.trace``), in % of them: the gold answer (or the sample's evidence) sat
in a chunk the model **read**; it was **caught** (some memory turn wrote it);
it was **kept** (the memory the final turn read still held it); the sample was
**answered** right. A wrong answer is then exactly one of: **never caught**,
**caught then lost**, **held but answered wrong**; a right answer without the
answer held is **right unheld** (a guess, or an answer worded otherwise). A
baseline (no memory) gets ``answered`` only. No AReaL import here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memagent_workflow.eval.results import SampleKey
from memagent_workflow.eval.trace import answered, read_traces

#: The split's columns, in table order, with how results.md heads them.
COLUMNS = {
    "read": "read",
    "caught": "caught",
    "kept": "kept",
    "answered": "answered",
    "never_caught": "wrong: never caught",
    "caught_then_lost": "wrong: caught then lost",
    "held_but_wrong": "wrong: held, answered wrong",
    "right_unheld": "right, not held",
}
EXPLAIN = (
    "Memory diagnostics, % of the traced samples (eval.trace; a failed sample "
    "has no trace): the evidence sat in a chunk the model **read**, the gold "
    "answer was **caught** by some memory turn, **kept** in the memory the final "
    "turn read, and the sample was **answered** right. Each wrong answer is "
    "exactly one of never caught / caught then lost / held but answered wrong; "
    "*right, not held*: right with the answer absent from the final memory "
    "(a guess). Baselines read no memory: answered only."
)


def _pct(count: int, total: int) -> float | None:
    return 100.0 * count / total if total else None


def kind(trace: dict[str, Any], right: bool) -> str | None:
    """A sample's failure kind (None if answered right)."""
    if right:
        return None
    if not trace.get("caught"):
        return "never_caught"
    return "held_but_wrong" if trace.get("kept") else "caught_then_lost"


def split(
    records: dict[SampleKey, dict[str, Any]],
    traces: dict[SampleKey, dict[str, Any]] | None,
) -> dict[str, Any]:
    """The split over ``records`` (the length's scored samples); ``traces``
    None: a baseline (answered only)."""
    if traces is None:
        ok = [r for r in records.values() if r.get("error") is None]
        return {
            "traced": 0,
            **dict.fromkeys(COLUMNS),
            "answered": _pct(sum(map(answered, ok)), len(ok)),
        }
    rows = [(traces[k], answered(r)) for k, r in records.items() if k in traces]
    n = len(rows)
    kinds = [kind(t, right) for t, right in rows]
    return {
        "traced": n,
        "read": _pct(sum(bool(t.get("read")) for t, _ in rows), n),
        "caught": _pct(sum(bool(t.get("caught")) for t, _ in rows), n),
        "kept": _pct(sum(bool(t.get("kept")) for t, _ in rows), n),
        "answered": _pct(sum(right for _, right in rows), n),
        **{k: _pct(kinds.count(k), n) for k in list(COLUMNS)[4:7]},
        "right_unheld": _pct(sum(right and not t.get("kept") for t, right in rows), n),
    }


def target_split(
    results_file: Path, records: dict[SampleKey, dict[str, Any]], mode: str
) -> dict[str, Any]:
    """The split of one results file (its trace beside it, if any)."""
    traces = read_traces(results_file) if mode == "memagent" else None
    if traces is not None and not traces:
        return {"traced": 0, **dict.fromkeys(COLUMNS)}  # eval.trace was off
    return split(records, traces)


def markdown(rows: list[dict[str, Any]]) -> list[str]:
    """results.md's section: one line per (task, length, mode) row."""
    shown = [r for r in rows if (r.get("memory") or {}).get("answered") is not None]
    if not shown:
        return []
    num = lambda v: "-" if v is None else f"{v:.0f}"  # noqa: E731
    lines = [
        "",
        "## Memory: where the answer was caught, kept or lost",
        "",
        EXPLAIN,
        "",
        "| task | length | mode | traced | " + " | ".join(COLUMNS.values()) + " |",
        "|---|---:|---|---:|" + "---:|" * len(COLUMNS),
    ]
    for r in shown:
        m = r["memory"]
        lines.append(
            f"| {r.get('task', 'ruler_hqa')} | {r['length']} | "
            f"{r.get('mode', 'memagent')} | {m['traced']} | "
            + " | ".join(num(m[k]) for k in COLUMNS)
            + " |"
        )
    return lines

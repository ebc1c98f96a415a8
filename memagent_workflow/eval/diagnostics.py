"""Where the memory caught, kept or lost the answer: one length's split, from traces.

For the samples of a results file that have a trace (MemAgent mode with
``eval.trace``) and that its row's accuracy counts, in % of them: the
evidence sat in a chunk the model **read**; the gold answer was **caught**
(some memory turn wrote it); it was **kept** (the memory the final turn read
still held it); the sample was **answered** right. A wrong answer is then
exactly one of: **never caught**, **caught then lost**, **held but answered
wrong**; a right answer without the answer held is **right unheld** (a guess,
or an answer worded otherwise). A baseline (no memory) gets ``answered`` only.

The denominator is the row's own: a failed sample has no trace, and an empty
output is left out as sub-EM leaves it out (``empty``: how many), so
``answered`` is the row's sub-EM over non-failed samples (RULER rows count an
empty output, as their score does, and ``answered`` is the share answered in
full). ``by_answer``: traced samples whose evidence was located by the answer's
words only (``evidence.py``), for which read is noise. No AReaL import here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memagent_workflow.eval import evidence
from memagent_workflow.eval.results import SampleKey
from memagent_workflow.eval.trace import answered, join, read_traces

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
    "Memory diagnostics, % of the traced samples (eval.trace) the row's accuracy "
    "counts: a failed sample has no trace and an empty output is left out, as "
    "sub-EM leaves it out, so **answered** is the row's sub-EM over the "
    "non-failed samples (RULER: the share answered in full). The evidence sat "
    "in a chunk the model **read**, the gold answer was **caught** by some "
    "memory turn, **kept** in the memory the final turn read. Each wrong answer "
    "is exactly one of never caught / caught then lost / held but answered "
    "wrong; *right, not held*: right with the answer absent from the final "
    "memory (a guess). *evidence*: where the set gives the evidence (a needle "
    "sentence, supporting sentences) it is located by it; else by the answer's "
    "words (*answer words*), which also mark other sentences holding them: "
    "read is then noise. Baselines read no memory: answered only."
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


def counted(record: dict[str, Any]) -> bool:
    """Whether the row's accuracy counts ``record``: RULER's score counts every
    record; sub-EM leaves an empty output out (``counted``)."""
    return "ruler_score" in record or bool(record.get("counted", True))


def split(
    records: dict[SampleKey, dict[str, Any]],
    traces: dict[SampleKey, dict[str, Any]] | None,
) -> dict[str, Any]:
    """The split over ``records`` (the length's scored samples); ``traces``
    None: a baseline (answered only)."""
    if traces is None:
        ok = [r for r in records.values() if r.get("error") is None and counted(r)]
        return {
            "traced": 0,
            **dict.fromkeys(COLUMNS),
            "answered": _pct(sum(map(answered, ok)), len(ok)),
        }
    mine = join(records, traces)
    traced = [k for k in records if k in mine]
    keys = [k for k in traced if counted(records[k])]  # the row's denominator
    rows = [(mine[k], answered(records[k])) for k in keys]
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
        "empty": len(traced) - n,
        "by_answer": sum(t.get("evidence_source") == evidence.ANSWER for t, _ in rows),
    }


def located_by(m: dict[str, Any]) -> str:
    """How a split's evidence was located: "set", "answer words", "answer
    words k/n" (mixed), "-" (nothing traced, or a split from before)."""
    n, by = m.get("traced") or 0, m.get("by_answer")
    if not n or by is None:
        return "-"
    if by == 0:
        return "set"
    return "answer words" if by == n else f"answer words {by}/{n}"


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
        "| task | length | mode | traced | "
        + " | ".join(COLUMNS.values())
        + " | evidence |",
        "|---|---:|---|---:|" + "---:|" * len(COLUMNS) + "---|",
    ]
    for r in shown:
        m = r["memory"]
        lines.append(
            f"| {r.get('task', 'ruler_hqa')} | {r['length']} | "
            f"{r.get('mode', 'memagent')} | {m['traced']} | "
            + " | ".join(num(m[k]) for k in COLUMNS)
            + f" | {located_by(m)} |"
        )
    return lines

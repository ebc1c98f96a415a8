"""``trace.html``: one self-contained page of an eval run's memory traces.

At the top, the memory diagnostics per length (``diagnostics.py``); below, each
traced sample as a timeline of its turns, rendered one sample at a time by the
page's own script (``trace_assets.py``; no network at view time). A page holds
at most ``max_samples`` samples, wrong answers first, and says so when it cut.
No AReaL import here.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from memagent_workflow.data.files import atomic_write
from memagent_workflow.eval import diagnostics, results, targets
from memagent_workflow.eval.trace import join, read_traces, trace_file
from memagent_workflow.eval.trace_assets import CSS, JS

PAGE_FILE = "trace.html"
MAX_SAMPLES = 500  # a page of 500 samples x 256 turns is ~30 MB; the browser copes
FILTERS = ("all", "wrong", "never_caught", "caught_then_lost", "held_but_wrong")


def sample_view(target: str, trace: dict[str, Any]) -> dict[str, Any]:
    """A trace line as the page's script reads it; ``answered`` None: unscored
    (``ask.py`` without ``--answer``), which has no failure kind."""
    right = trace.get("answered")
    kind = None if right is None else diagnostics.kind(trace, bool(right))
    return {**trace, "target": target, "kind": kind}


def collect(
    output_dir: str | Path, max_samples: int = MAX_SAMPLES
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """(diagnostics rows, samples, samples left out) of a results folder."""
    out = Path(output_dir)
    rows, samples = [], []
    for t in sorted(targets.present(out), key=targets._order):
        records = results.read_records(t.results_file(out))
        row = {"task": t.task, "length": t.length, "mode": t.mode}
        row["memory"] = diagnostics.target_split(t.results_file(out), records, t.mode)
        rows.append(row)
        traces = read_traces(t.results_file(out)) if t.mode == "memagent" else {}
        for key, tr in join(records, traces).items():
            rec = records[key]
            tr = {**tr, "answered": diagnostics.answered(rec)}
            tr["counted"] = diagnostics.counted(rec)
            samples.append(sample_view(t.name, tr))
    samples.sort(key=lambda s: bool(s["answered"]))  # wrong answers first
    return rows, samples[:max_samples], max(0, len(samples) - max_samples)


def table_html(rows: list[dict[str, Any]]) -> str:
    """The diagnostics table (``id="diagnostics"``), rendered here, not by script."""
    names = [*diagnostics.COLUMNS.values(), "evidence"]
    head = "".join(f"<th>{html.escape(h)}</th>" for h in names)
    body = []
    for r in rows:
        m = r["memory"]
        cells = "".join(
            f"<td>{'-' if m[k] is None else f'{m[k]:.0f}'}</td>"
            for k in diagnostics.COLUMNS
        )
        body.append(
            f"<tr><td>{html.escape(r['task'])} {r['length']} "
            f"{html.escape(r['mode'])}</td><td>{m['traced']}</td>{cells}"
            f"<td>{html.escape(diagnostics.located_by(m))}</td></tr>"
        )
    return (
        '<table id="diagnostics"><tr><th>target</th><th>traced</th>'
        f"{head}</tr>{''.join(body)}</table>"
    )


def script_json(value: Any) -> str:
    """``value`` as JSON safe inside a ``<script>`` element: no ``<`` at all (so
    neither ``</script>`` nor ``<!--`` with ``<script`` can end or escape the
    element, HTML's script-data rules), nor ``>`` or ``&``; JSON.parse reads
    the escapes back as the same text."""
    text = json.dumps(value, ensure_ascii=False)
    for ch in "<>&":
        text = text.replace(ch, f"\\u{ord(ch):04x}")
    return text


def page_html(
    title: str,
    rows: list[dict[str, Any]],
    samples: list[dict[str, Any]],
    left_out: int = 0,
) -> str:
    """The whole page: table, filters, the samples' data and the script."""
    data = script_json({"samples": samples})
    note = (
        f"<p class='note'>This page holds {len(samples)} samples, wrong answers "
        f"first; {left_out} more are in the *.trace.jsonl files "
        "(view_trace.py --max-samples raises the cap).</p>"
        if left_out
        else ""
    )
    options = "".join(f"<option>{f}</option>" for f in FILTERS)
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{CSS}</style></head><body>
<header><h1>{html.escape(title)}</h1>
<p>{html.escape(diagnostics.EXPLAIN.replace("**", "").replace("*", ""))}</p>
{table_html(rows)}{note}
<label>show <select id="filter">{options}</select></label>
<span class="meta">yellow turn: the evidence sits in its chunk (its text
around it shown; "located by answer words": any chunk holding the answer's
words); green: new in the memory; red: dropped from it; highlighted: the gold
answer</span>
</header>
<div id="main"><div id="side"><div id="list"></div></div><div id="view"></div></div>
<script type="application/json" id="trace-data">{data}</script>
<script>{JS}</script>
</body></html>
"""


def write_page(
    output_dir: str | Path,
    path: str | Path | None = None,
    max_samples: int = MAX_SAMPLES,
    title: str | None = None,
) -> Path:
    """Write the page of a results folder (default ``{output_dir}/trace.html``)."""
    out = Path(output_dir)
    rows, samples, left_out = collect(out, max_samples)
    path = Path(path) if path is not None else out / PAGE_FILE
    text = page_html(title or f"Memory traces: {out}", rows, samples, left_out)
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return path


def has_traces(output_dir: str | Path) -> bool:
    """Whether a results folder holds any trace file."""
    out = Path(output_dir)
    return any(trace_file(t.results_file(out)).is_file() for t in targets.present(out))

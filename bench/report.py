"""Write ``results.md`` from the benchmarks' JSON files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bench import report_actor, report_loop, report_sections, report_serve
from bench.report_sections import ratio_cell, status_cell

FILES = (
    "overhead",
    "async_vs_lockstep",
    "replay",
    "loop",
    "scaling",
    "learning",
    "actor",
    "length",
    "serve",
    "serve_faults",
)
TITLES = {
    "overhead": "1. Driver overhead per turn",
    "async_vs_lockstep": "2. Async (AReaL) vs small-batch lockstep rollout, measured",
    "replay": "3. The original's rollout schedule at its own scale, replayed",
    "loop": "4. The training loop: AReaL's asynchrony vs the original's schedule",
    "scaling": "5. Scaling in context length",
    "learning": "6. Learning: GRPO through the real stack, and two controls",
    "actor": "7. The actor update: where its time goes, and what two options save",
    "length": "8. Length: trained on short documents, read at up to 256 chunks",
    "serve": "10. The service: OpenAI's chat API in front of the engine",
    "serve_faults": "11. The service under faults and load",
}
PLOT = "loop.png"
PREVIOUS = "loop.previous.json"  # the loop result a new run replaced (run.py)


def _load(out_dir: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for name in FILES:
        path = out_dir / f"{name}.json"
        if path.exists():
            found[name] = json.loads(path.read_text())
    return found


_table = report_loop.table


RENDER = {
    "overhead": report_sections.overhead,
    "async_vs_lockstep": report_sections.rollout,
    "replay": report_loop.replay,
    "scaling": report_sections.scaling,
    "learning": report_sections.learning,
    "actor": report_actor.actor,
    "length": report_sections.length,
    "serve": report_serve.serve,
    "serve_faults": report_serve.faults,
}


def _machine(results: dict[str, dict[str, Any]]) -> list[str]:
    m = next(iter(results.values()))["machine"]
    rows = [
        f"{TITLES[n].split('. ', 1)[1]}|{r['machine']['date']}|{r['bench_wall_s']:.0f}"
        f"|{r['loadavg_before'][0]:.1f} / {r.get('loadavg_after', [float('nan')])[0]:.1f}"
        + (
            f"|{r['machine_busy']:.0%}|{r['own_cpu_s'] / r['bench_wall_s']:.2f}"
            f"|{r['others_busy_cores']:.2f}"
            if "machine_busy" in r
            else "|||"
        )
        for n, r in results.items()
        if "loadavg_before" in r
    ]
    return [
        f"Measured on {m['cpu']} ({m['cpu_cores']} cores), {m['platform']}; "
        f"Python {m['python']}, torch {m['torch']}, transformers {m['transformers']}, "
        f"tokenizers {m['tokenizers']}, areal {m['areal']}. The machine is shared with other "
        "work, so times are best-of or median of repeats, ratios are taken within one run, "
        "and the load is stated: the 1-minute load average before and after each benchmark, "
        "the whole machine's CPU use over it (share of all cores), the cores the benchmark "
        "itself used (its CPU time, subprocesses included, over its wall time) and what "
        "that leaves to other processes.",
        "",
        *_table(
            "benchmark|finished (UTC)|wall s|load average before / after|machine busy"
            "|cores used by the benchmark|cores used by others",
            rows,
        ),
    ]


def _summary(results: dict[str, dict[str, Any]]) -> list[str]:
    rows = [
        f"{TITLES[name].split('. ', 1)[1]}|{t['metric']}|{t['measured']}|{t['target']}"
        f"|{ratio_cell(t)}|{status_cell(t)}"
        for name, res in results.items()
        for t in res["targets"]
    ]
    return _table("benchmark|metric|measured|target|ratio|status", rows)


def render(
    results: dict[str, dict[str, Any]],
    notes: str = "",
    plot: str | None = None,
    previous: dict[str, Any] | None = None,
) -> str:
    """The report; ``plot`` is the loop plot's path relative to the report,
    ``previous`` an earlier loop result to check reproducibility against."""
    smoke = any(r.get("smoke") for r in results.values())
    lines = [
        "# Benchmarks: driver overhead, rollout schedules, the training loop, O(N), "
        "learning, the actor update",
        "",
    ]
    if smoke:
        lines += [
            "> **Smoke run at toy sizes: the numbers say nothing about the targets.**",
            "",
        ]
    lines += [
        "Reproduce with `uv run python bench/run.py` (all seven, about an hour on 2 "
        "cores depending on the load; "
        "`--only overhead|async|replay|loop|scaling|learning|actor|length|serve|serve_faults` for some, `--smoke` "
        "for toy sizes). "
        "Raw numbers: `bench/results/*.json`.",
        "",
    ]
    if not results:
        return "\n".join(lines + ["No results yet.", ""])
    lines += _machine(results) + ["## Summary", ""] + _summary(results)
    for name in FILES:
        lines += [f"## {TITLES[name]}", ""]
        if name not in results:
            lines += ["Not run.", ""]
        elif name == "loop":
            lines += report_loop.loop(results[name], plot, previous)
        else:
            lines += RENDER[name](results[name])
    misses = [
        t["metric"]
        for r in results.values()
        for t in r["targets"]
        if t["pass"] is False
    ]
    lines += ["## Closing note", ""]
    lines += [
        f"Missed: {'; '.join(misses)}."
        if misses
        else "Every target is met in this run.",
        "",
    ]
    if notes:
        lines += [notes.strip(), ""]
    return "\n".join(lines)


def write_report(out_dir: Path, md_path: Path) -> Path:
    """Render the JSON files found in ``out_dir`` (plus the notes and the loop
    plot, drawn beside them) to ``md_path``."""
    from bench.plot import plot_loop
    from memagent_workflow.data.files import atomic_write

    notes_path = Path(__file__).with_name("NOTES.md")
    notes = notes_path.read_text() if notes_path.exists() else ""
    results = _load(out_dir)
    plot = None
    if "loop" in results:
        path = plot_loop(results["loop"], out_dir / PLOT)
        plot = os.path.relpath(path, md_path.parent)
    previous = out_dir / PREVIOUS
    previous = json.loads(previous.read_text()) if previous.exists() else None
    text = render(results, notes, plot, previous)
    atomic_write(md_path, lambda tmp: tmp.write_text(text))
    return md_path

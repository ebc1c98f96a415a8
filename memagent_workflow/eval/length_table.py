"""Accuracy per document length for several eval runs: one table, one plot.

Each row is an ``examples/eval.py`` output folder (its ``summary.json``), e.g.
the trained model, the same model before RL, and the trained model with
``memagent.wipe_memory=true``. The table is written as ``length_table.json``
(``{"chunks": [...], ROW: [sub-EM in [0, 1] per length, None where not
measured], ..., "exact_match": {ROW: [exact match per length]}, "memory": {ROW:
[split per length]}}`` plus any extra keys given), ``length_table.md`` and
``length_table.png``. The split is each summary's caught / kept / answered
row (``diagnostics.py``, from the run's traces; None where it has none). No
AReaL import here.

    python -m memagent_workflow.eval.length_table --out DIR \\
        --row trained=OUT1 --row warm_start=OUT2 --row memory_wiped=OUT3
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memagent_workflow.data.files import atomic_write, write_json
from memagent_workflow.eval.diagnostics import COLUMNS, located_by
from memagent_workflow.eval.results import SUMMARY_FILE

TABLE_FILE = "length_table.json"
MEMORY = "memory"  # the table's key of the caught / kept / answered split
# The table's key of exact match per row: sub-EM (the rows, as the original
# scores) counts an empty answer as right (eval/scoring.py), so a control that a
# model can answer with "\boxed{ }" is read by exact match.
EXACT = "exact_match"


def _summary_rows(output_dir: str | os.PathLike) -> list[dict[str, Any]]:
    path = Path(output_dir) / SUMMARY_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no eval summary (run examples/eval.py)")
    return json.loads(path.read_text(encoding="utf-8"))["lengths"]


def percent(metric: str) -> Callable[[dict[str, Any]], float | None]:
    """A summary row's ``metric`` (``sub_em``, ``em``, ``f1``: percent) in [0, 1]."""
    return lambda row: None if row.get(metric) is None else row[metric] / 100


def memory_split(row: dict[str, Any]) -> dict | None:
    """A summary row's caught / kept / answered split (``memory``: % of the traced
    samples); None where the run traced nothing."""
    m = row.get(MEMORY)
    return m if m and m.get("traced") else None


def length_table(rows: dict[str, str | os.PathLike], **extra: Any) -> dict[str, Any]:
    """``{"chunks": [...], label: [sub-EM or None, ...], "exact_match": {label:
    [EM or None, ...]}, "memory": {label: [split or None, ...]}, **extra}`` over
    the union of the rows' lengths (each row's ``summary.json`` read once)."""
    summaries = {label: _summary_rows(d) for label, d in rows.items()}
    chunks = sorted({int(r["length"]) for s in summaries.values() for r in s})

    def column(value: Callable[[dict[str, Any]], Any]) -> dict[str, list]:
        by_length = {
            label: {int(r["length"]): value(r) for r in summary}
            for label, summary in summaries.items()
        }
        return {label: [v.get(n) for n in chunks] for label, v in by_length.items()}

    return {
        **extra,
        "chunks": chunks,
        **column(percent("sub_em")),
        EXACT: column(percent("em")),
        MEMORY: column(memory_split),
    }


def row_labels(table: dict[str, Any]) -> list[str]:
    """The keys of ``table`` that are rows (a list per length)."""
    n = len(table["chunks"])
    return [
        k
        for k, v in table.items()
        if k != "chunks" and isinstance(v, list) and len(v) == n
    ]


def grid_markdown(chunks: list[int], rows: dict[str, list]) -> list[str]:
    """Rows x lengths, values with two decimals ("-" where not measured)."""
    cell = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    return [
        "| row | " + " | ".join(str(n) for n in chunks) + " |",
        "|---" * (len(chunks) + 1) + "|",
        *(f"| {k} | " + " | ".join(cell(x) for x in v) + " |" for k, v in rows.items()),
    ]


def table_markdown(table: dict[str, Any], chance: float | None = None) -> str:
    """Rows x lengths, accuracies with two decimals."""
    lines = grid_markdown(table["chunks"], {k: table[k] for k in row_labels(table)})
    if chance is not None:
        lines.append(f"\nChance: {chance:.2f}. Columns: chunks per document.")
    return "\n".join(lines + exact_markdown(table) + memory_markdown(table)) + "\n"


def exact_markdown(table: dict[str, Any]) -> list[str]:
    """The rows by exact match ([] where no summary recorded it)."""
    exact = {
        k: v
        for k, v in (table.get(EXACT) or {}).items()
        if any(x is not None for x in v)
    }
    if not exact:
        return []
    return [
        "",
        "Exact match (the rows above are sub-EM, which counts an empty answer as "
        "right, as the original scores):",
        "",
        *grid_markdown(table["chunks"], exact),
    ]


def memory_markdown(table: dict[str, Any]) -> list[str]:
    """One line per row and length of the split ([] if nothing was traced)."""
    split = table.get(MEMORY) or {}
    cells = [
        (label, n, m)
        for label, per_length in split.items()
        for n, m in zip(table["chunks"], per_length, strict=True)
        if m is not None
    ]
    if not cells:
        return []
    num = lambda v: "-" if v is None else f"{v:.0f}"  # noqa: E731
    return [
        "",
        "Memory, % of the traced samples the accuracy counts: the evidence was "
        "**read**, **caught** by a memory turn, **kept** to the final turn, "
        "**answered** right; each wrong answer is one of the three failure kinds; "
        "*evidence*: located by the set's evidence or by the answer's words only "
        "(docs/trace.md).",
        "",
        "| row | chunks | traced | " + " | ".join(COLUMNS.values()) + " | evidence |",
        "|---|---:|---:|" + "---:|" * len(COLUMNS) + "---|",
        *(
            f"| {label} | {n} | {m['traced']} | "
            + " | ".join(num(m.get(k)) for k in COLUMNS)
            + f" | {located_by(m)} |"
            for label, n, m in cells
        ),
    ]


def plot_length_table(
    table: dict[str, Any],
    png: str | os.PathLike,
    chance: float | None = None,
    train_chunks: int | None = None,
    title: str = "Accuracy per document length",
) -> Path:
    """Accuracy against chunks per document (log axis), one line per row."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for label in row_labels(table):
        pairs = zip(table["chunks"], table[label], strict=True)
        xs = [n for n, v in pairs if v is not None]
        ys = [v for v in table[label] if v is not None]
        if xs:
            ax.plot(xs, ys, marker="o", label=label.replace("_", " "))
    if chance is not None:
        ax.axhline(chance, color="grey", linestyle=":", label="chance")
    if train_chunks is not None:
        ax.axvline(train_chunks, color="grey", linestyle="--", label="trained at")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("chunks per document")
    ax.set_ylabel("held-out accuracy")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title)
    ax.legend(loc="center right", fontsize=8)
    fig.tight_layout()
    out = Path(png)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, out)
    return out


def write_length_table(
    out_dir: str | os.PathLike,
    rows: dict[str, str | os.PathLike],
    chance: float | None = None,
    title: str = "Accuracy per document length",
    **extra: Any,
) -> dict[str, Any]:
    """``length_table.{json,md,png}`` in ``out_dir``; returns the table."""
    out = Path(out_dir)
    table = length_table(rows, **extra)
    write_json(out / TABLE_FILE, table)
    text = table_markdown(table, chance)
    atomic_write(out / "length_table.md", lambda tmp: tmp.write_text(text, "utf-8"))
    plot_length_table(
        table, out / "length_table.png", chance, extra.get("train_chunks"), title
    )
    return table


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for length_table.*")
    ap.add_argument(
        "--row", action="append", required=True, help="LABEL=EVAL_OUTPUT_DIR"
    )
    ap.add_argument("--chance", type=float, default=None)
    ap.add_argument("--train-chunks", type=int, default=None)
    args = ap.parse_args(argv)
    rows = {}
    for spec in args.row:
        label, sep, folder = spec.partition("=")
        if not sep or not label or not folder:
            ap.error(f"--row must be LABEL=DIR, got {spec!r}")
        rows[label] = folder
    extra = {} if args.train_chunks is None else {"train_chunks": args.train_chunks}
    table = write_length_table(args.out, rows, args.chance, **extra)
    print(table_markdown(table, args.chance), end="")


if __name__ == "__main__":
    main()

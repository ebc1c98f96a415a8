"""``results.md`` and ``accuracy.png`` from an eval summary, beside published numbers.

The anchors are RULER-HotpotQA sub-EM (%) from the MemAgent paper, v1 (July
2025), 128 questions, one sample per question; None = not published or not
verified. No AReaL import here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memagent_workflow.data.files import atomic_write
from memagent_workflow.eval import report_tasks

# Documents per sample (N) -> the paper's nominal context length in tokens.
PAPER_TOKENS = {
    50: 7_000,
    100: 14_000,
    200: 28_000,
    400: 56_000,
    800: 112_000,
    1600: 224_000,
    3200: 448_000,
    6400: 896_000,
    12800: 1_750_000,
    25600: 3_500_000,
}
_N = list(PAPER_TOKENS)


def _row(*values: float | None) -> dict[int, float | None]:
    return dict(zip(_N, values, strict=True))


ANCHORS: dict[str, dict[int, float | None]] = {
    "RL-MemAgent-14B (paper)": _row(
        83.59, 82.03, 84.38, 80.47, 76.56, 81.25, 75.00, 77.34, 76.56, 78.12
    ),
    "RL-MemAgent-7B (paper)": _row(
        82.03, 79.69, 78.91, None, 79.69, None, 74.22, 76.56, 75.78, 71.09
    ),
    "Qwen2.5-7B-Instruct-1M (paper)": _row(
        61.72, 56.25, 53.91, 55.47, 51.56, 33.59, 12.50, 0.00, None, None
    ),
}


def anchors_for(lengths: list[int]) -> dict[str, dict[str, float | None]]:
    """The anchor rows restricted to ``lengths`` (JSON-friendly string keys)."""
    return {
        name: {str(n): values.get(n) for n in lengths}
        for name, values in ANCHORS.items()
    }


def tokens_label(tokens: float | None) -> str:
    """7000 -> '7K', 1750000 -> '1.75M'."""
    if tokens is None:
        return "-"
    if tokens >= 1e6:
        return f"{tokens / 1e6:.3g}M"
    if tokens >= 1e3:
        return f"{tokens / 1e3:.3g}K"
    return f"{tokens:.0f}"


def _num(v: float | None, fmt: str = ".2f") -> str:
    return "-" if v is None else format(v, fmt)


def results_markdown(summary: dict[str, Any], title: str | None = None) -> str:
    """Our per-length table, then sub-EM beside the paper's rows."""
    meta = summary.get("meta", {})
    rows = _memagent_rows(summary)
    lines = [f"# {title or 'RULER-HQA evaluation'}", ""]
    for key in ("model", "protocol", "note"):
        if meta.get(key):
            lines.append(f"- {key}: {meta[key]}")
    lines += [
        "",
        "Accuracies in %. **all**: over every sample, a failed sample counting as "
        "wrong (this project's headline). **non-failed**: over the samples that "
        "did not fail (the original evaluation's convention: it drops empty "
        "outputs). Paper length: the published set's context length for N "
        "documents (Qwen tokenizer); mean context tokens: measured with this "
        "run's tokenizer.",
        "",
        "| N docs | paper length | n | failed | missing | sub-EM (all) "
        "| sub-EM (non-failed) | EM (all) | EM (non-failed) | F1 (all) "
        "| F1 (non-failed) | mean chunks | mean context tokens | wall (s) "
        "| gen tokens/s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        metrics = " | ".join(
            _num(r.get(f"{key}{tail}"))
            for key in ("sub_em", "em", "f1")
            for tail in ("", "_non_failed")
        )
        lines.append(
            f"| {r['length']}{f' ({kind})' if (kind := r.get('set')) else ''} "
            f"| {tokens_label(PAPER_TOKENS.get(r['length']))} "
            f"| {r['n']} | {r['failures']} | {_num(r['missing'], 'd')} "
            f"| {metrics} "
            f"| {_num(r['mean_chunks'], '.1f')} "
            f"| {_num(r['mean_context_tokens'], '.0f')} "
            f"| {_num(r['wall_s'], '.1f')} | {_num(r['tokens_per_s'], '.1f')} |"
        )
    lengths = [r["length"] for r in rows]
    head = " | ".join(
        f"{n} ({tokens_label(PAPER_TOKENS.get(n))})" if n in PAPER_TOKENS else str(n)
        for n in lengths
    )
    lines += [
        "",
        "sub-EM (%) beside the published numbers (MemAgent paper v1, 128 questions):",
        "",
        f"| model | {head} |",
        "|---|" + "---:|" * len(lengths),
        "| **this run** (all) | " + " | ".join(_num(r["sub_em"]) for r in rows) + " |",
        "| this run (non-failed) | "
        + " | ".join(_num(r.get("sub_em_non_failed")) for r in rows)
        + " |",
    ]
    for name, values in ANCHORS.items():
        cells = " | ".join(_num(values.get(n)) for n in lengths)
        lines.append(f"| {name} | {cells} |")
    label = meta.get("label") or "this run"
    lines += report_tasks.baseline_markdown(summary)
    lines += report_tasks.ruler_markdown(summary, label)
    return "\n".join(lines) + "\n"


def _memagent_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """RULER-HQA rows of MemAgent mode (baseline modes are reported apart)."""
    return [r for r in summary["lengths"] if r.get("mode", "memagent") == "memagent"]


def plot_accuracy(
    summary: dict[str, Any], path: str | os.PathLike, title: str | None = None
) -> Path:
    """sub-EM against context length (log x), ours beside the paper's rows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ruler = bool(summary.get("ruler"))
    fig, axes = plt.subplots(1, 1 + ruler, figsize=(7 + 6 * ruler, 5 + ruler))
    ax = axes[0] if ruler else axes
    label = summary.get("meta", {}).get("label") or "this run"
    if ruler:
        report_tasks.draw_ruler(axes[1], summary, label)
    report_tasks.draw_baselines(ax, summary, label, PAPER_TOKENS)
    for (name, values), marker in zip(ANCHORS.items(), "s^v", strict=True):
        pts = [(PAPER_TOKENS[n], v) for n, v in values.items() if v is not None]
        ax.plot(*zip(*pts, strict=True), marker=marker, ls="--", lw=1, label=name)
    ours = [
        (r["mean_context_tokens"] or PAPER_TOKENS.get(r["length"]), r["sub_em"])
        for r in _memagent_rows(summary)
        if r["sub_em"] is not None
    ]
    ours = [(x, y) for x, y in ours if x]
    if ours:
        ax.plot(
            *zip(*sorted(ours), strict=True),
            marker="o",
            lw=2.5,
            color="black",
            label=label,
        )
    ax.set_xscale("log")
    ax.set_ylim(-2, 100)
    ax.set_xlabel("context length (tokens, log scale)")
    ax.set_ylabel("sub-EM (%)")
    ax.set_title(title or "RULER-HQA accuracy against context length")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(
        fontsize=8,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        ncol=2,
        frameon=False,
    )
    fig.tight_layout()
    path = Path(path)
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    plt.close(fig)
    return path


def write_report(
    summary: dict[str, Any], output_dir: str | os.PathLike, title: str | None = None
) -> tuple[Path, Path]:
    """Write ``results.md`` and ``accuracy.png`` into ``output_dir``."""
    out = Path(output_dir)
    md = out / "results.md"
    text = results_markdown(summary, title)
    atomic_write(md, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return md, plot_accuracy(summary, out / "accuracy.png", title)

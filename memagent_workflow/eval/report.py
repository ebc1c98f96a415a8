"""``results.md`` and ``accuracy.png`` from an eval summary, beside the
published rows of ``anchors.py``. No AReaL import here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memagent_workflow.data.files import atomic_write
from memagent_workflow.eval import diagnostics, report_tasks
from memagent_workflow.eval.anchors import (  # noqa: F401 (re-exported)
    ANCHOR_ROWS,
    NOT_IN_REFERENCES,
    PAPER_TOKENS,
    anchors_for,
    anchors_for_model,
)


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


_LABEL = {"all": "all", "non_failed": "non-failed"}


def _tails(meta: dict[str, Any]) -> tuple[tuple[str, str], tuple[str, str]]:
    """((key tail, label) of the headline denominator, (.., ..) of the other)."""
    head = meta.get("headline") or "all"
    other = "non_failed" if head == "all" else "all"
    tail = {"all": "", "non_failed": "_non_failed"}
    return (tail[head], _LABEL[head]), (tail[other], _LABEL[other])


def _mean_std(row: dict[str, Any], key: str) -> str:
    mean, std = row.get(key), row.get(f"{key}_std")
    return _num(mean) if std is None else f"{_num(mean)} ± {_num(std)}"


def results_markdown(summary: dict[str, Any], title: str | None = None) -> str:
    """Our per-length table, then sub-EM beside the published rows."""
    meta = summary.get("meta", {})
    rows = _memagent_rows(summary)
    (h, h_label), (o, o_label) = _tails(meta)
    lines = [f"# {title or 'RULER-HQA evaluation'}", ""]
    for key in ("model", "protocol", "note"):
        if meta.get(key):
            lines.append(f"- {key}: {meta[key]}")
    lines += [
        "",
        "Accuracies in %, the original evaluation's per-sample scores. **all**: "
        "over every counted sample, a failed sample counting as wrong. "
        "**non-failed**: over the counted samples that did not fail (the original "
        "evaluation's convention: it drops failed requests). An empty output is "
        "counted in neither (the original skips it: *empty*). The headline "
        f"denominator (**{h_label}**) comes first. Means pool every repeat; ± is "
        "the standard deviation of the per-repeat accuracies; best-of-n is the "
        "best repeat. Paper length: the published set's context length for N "
        "documents (Qwen tokenizer); mean context tokens: measured with this "
        "run's tokenizer.",
        "",
        f"| N docs | paper length | n | repeats | failed | empty | missing "
        f"| sub-EM ({h_label}) | sub-EM ({o_label}) | sub-EM best-of-n ({h_label}) "
        f"| EM ({h_label}) | EM ({o_label}) | F1 ({h_label}) | F1 ({o_label}) "
        "| mean chunks | mean context tokens | wall (s) | gen tokens/s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:"
        "|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['length']}{f' ({kind})' if (kind := r.get('set')) else ''} "
            f"| {tokens_label(PAPER_TOKENS.get(r['length']))} "
            f"| {r['n']} | {r.get('repeats', 1)} | {r['failures']} "
            f"| {r.get('empty', 0)} | {_num(r['missing'], 'd')} "
            f"| {_mean_std(r, f'sub_em{h}')} | {_mean_std(r, f'sub_em{o}')} "
            f"| {_num(r.get(f'sub_em{h}_best'))} "
            f"| {_num(r.get(f'em{h}'))} | {_num(r.get(f'em{o}'))} "
            f"| {_num(r.get(f'f1{h}'))} | {_num(r.get(f'f1{o}'))} "
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
        "sub-EM (%) beside the published rows (128 questions each; compare a "
        "best-of-n row with ours, a mean or single-sample row with our mean):",
        "",
        f"| model | source | metric | {head} |",
        "|---|---|---|" + "---:|" * len(lengths),
        f"| **this run** | | mean ({h_label}) | "
        + " | ".join(_mean_std(r, f"sub_em{h}") for r in rows)
        + " |",
        f"| this run | | mean ({o_label}) | "
        + " | ".join(_mean_std(r, f"sub_em{o}") for r in rows)
        + " |",
        f"| this run | | best-of-n ({h_label}) | "
        + " | ".join(_num(r.get(f"sub_em{h}_best")) for r in rows)
        + " |",
    ]
    for a in anchors_for_model(meta.get("model")):
        cells = " | ".join(_num(a.values.get(n)) for n in lengths)
        lines.append(f"| {a.name} | {a.source} | {a.metric} | {cells} |")
    lines += ["", NOT_IN_REFERENCES]
    label = meta.get("label") or "this run"
    lines += report_tasks.baseline_markdown(summary)
    lines += report_tasks.ruler_markdown(summary, label)
    lines += diagnostics.markdown(summary["lengths"] + summary.get("ruler", []))
    return "\n".join(lines) + "\n"


def _memagent_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """RULER-HQA rows of MemAgent mode (baseline modes are reported apart)."""
    return [r for r in summary["lengths"] if r.get("mode", "memagent") == "memagent"]


def plot_accuracy(
    summary: dict[str, Any], path: str | os.PathLike, title: str | None = None
) -> Path:
    """sub-EM against context length (log x): our mean (± std across repeats,
    headline denominator) and best-of-n, beside the published rows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    meta = summary.get("meta", {})
    (h, h_label), _ = _tails(meta)
    ruler = bool(summary.get("ruler"))
    fig, axes = plt.subplots(1, 1 + ruler, figsize=(7 + 6 * ruler, 5.5 + ruler))
    ax = axes[0] if ruler else axes
    label = meta.get("label") or "this run"
    if ruler:
        report_tasks.draw_ruler(axes[1], summary, label)
    report_tasks.draw_baselines(ax, summary, label, PAPER_TOKENS)
    markers = "s^v<>Dph"
    for a, marker in zip(anchors_for_model(meta.get("model")), markers, strict=False):
        pts = [(PAPER_TOKENS[n], v) for n, v in a.values.items() if v is not None]
        ax.plot(*zip(*pts, strict=True), marker=marker, ls="--", lw=1, label=a.label)
    ours = sorted(  # by x alone: two lengths may share it
        [
            (x, r)
            for r in _memagent_rows(summary)
            if r.get(f"sub_em{h}") is not None
            and (x := r["mean_context_tokens"] or PAPER_TOKENS.get(r["length"]))
        ],
        key=lambda p: p[0],
    )
    if ours:
        xs = [x for x, _ in ours]
        ys = [r[f"sub_em{h}"] for _, r in ours]
        ax.plot(
            xs,
            ys,
            marker="o",
            lw=2.5,
            color="black",
            label=f"{label} (mean, {h_label})",
        )
        stds = [r.get(f"sub_em{h}_std") or 0.0 for _, r in ours]
        if any(stds):  # std across repeats
            ax.errorbar(xs, ys, yerr=stds, fmt="none", ecolor="black", capsize=3)
        if any((r.get("repeats") or 1) > 1 for _, r in ours):
            ax.plot(
                xs,
                [r[f"sub_em{h}_best"] for _, r in ours],
                marker="*",
                ls=":",
                color="black",
                label=f"{label} (best-of-n, {h_label})",
            )
    ax.set_xscale("log")
    ax.set_ylim(-2, 100)
    ax.set_xlabel("context length (tokens, log scale)")
    ax.set_ylabel("sub-EM (%)")
    ax.set_title(title or "RULER-HQA accuracy against context length")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(
        fontsize=6,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.14),
        ncol=1,
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

"""The parts of ``results.md`` and ``accuracy.png`` beyond MemAgent on RULER-HQA:
baseline modes on RULER-HQA, and RULER's tasks by task x length x mode.

The RULER anchors are the MemAgent paper's (v2, Fig. 5) NIAH averages at 512K
tokens, the only out-of-distribution figures the reference notes give per
length; None elsewhere (not published per task, or not verified).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from memagent_workflow.eval.config import MODES
from memagent_workflow.eval.ruler.tasks import TASKS

RULER_ANCHOR_LENGTH = 524288
#: NIAH average (%) at 512K tokens (MemAgent paper v2, Fig. 5).
RULER_ANCHORS = {
    "RL-MemAgent-14B (paper)": 98.18,
    "RL-MemAgent-7B (paper)": 96.62,
    "14B without RL (paper)": 40.10,
}


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def tokens_label(n: int) -> str:
    return f"{n // 1024}K" if n % 1024 == 0 and n < 2**20 else str(n)


def baseline_markdown(summary: dict[str, Any]) -> list[str]:
    """RULER-HQA rows of the baseline modes (sub-EM, and how much was cut)."""
    rows = [
        r for r in summary.get("lengths", []) if r.get("mode", "memagent") != "memagent"
    ]
    if not rows:
        return []
    lines = [
        "",
        "## Baselines on RULER-HQA",
        "",
        "One turn per question: **full_context** reads the whole context, centre-"
        "cut to the model's window (cut: samples cut, mean tokens cut per sample); "
        "**no_context** reads the question alone. Same answer protocol and scoring.",
        "",
        "| mode | N docs | n | failed | sub-EM (all) | sub-EM (non-failed) | EM (all) "
        "| F1 (all) | mean context tokens | cut | mean tokens cut |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        cut = r.get("cut_samples")
        lines.append(
            f"| {r['mode']} | {r['length']} | {r['n']} | {r['failures']} "
            f"| {_num(r['sub_em'])} | {_num(r['sub_em_non_failed'])} | {_num(r['em'])} "
            f"| {_num(r['f1'])} | {_num(r['mean_context_tokens'])} "
            f"| {'-' if cut is None else cut} | {_num(r.get('mean_cut_tokens'))} |"
        )
    return lines


def averages(rows: list[dict[str, Any]]) -> dict[tuple[str, str], dict[int, float]]:
    """(name, mode) -> length -> mean score, for 'NIAH average' and 'average'."""
    acc: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for r in rows:
        if r.get("score") is None:
            continue
        acc["average", r["mode"]][r["length"]].append(r["score"])
        if TASKS[r["task"]].family == "niah":
            acc["NIAH average", r["mode"]][r["length"]].append(r["score"])
    return {k: {n: sum(v) / len(v) for n, v in d.items()} for k, d in acc.items()}


def _mode_order(item: tuple[tuple[str, str], Any]) -> tuple[str, int]:
    (name, mode), _ = item
    return (name, MODES.index(mode) if mode in MODES else len(MODES))


def ruler_markdown(summary: dict[str, Any], label: str) -> list[str]:
    """RULER tasks: score (%) by task and mode against length, with averages."""
    rows = summary.get("ruler", [])
    if not rows:
        return []
    lengths = sorted({r["length"] for r in rows} | {RULER_ANCHOR_LENGTH})
    cells: dict[tuple[str, str], dict[int, dict]] = defaultdict(dict)
    for r in rows:
        cells[r["task"], r["mode"]][r["length"]] = r
    head = " | ".join(tokens_label(n) for n in lengths)
    lines = [
        "",
        f"## RULER tasks: {label}",
        "",
        "Score (%) over every sample (a failed one counts 0): RULER's "
        "string_match_all (the share of gold values in the answer; niah, vt, fwe) "
        "or string_match_part (any gold value; qa), on the extracted answer. "
        "n per cell in brackets.",
        "",
        f"| task | mode | {head} |",
        "|---|---|" + "---:|" * len(lengths),
    ]
    for (task, mode), by_n in cells.items():
        row = " | ".join(
            f"{_num(by_n[n]['score'])} ({by_n[n]['n']})" if n in by_n else "-"
            for n in lengths
        )
        lines.append(f"| {task} | {mode} | {row} |")
    for (name, mode), by_n in sorted(averages(rows).items(), key=_mode_order):
        row = " | ".join(_num(by_n.get(n)) for n in lengths)
        lines.append(f"| **{name}** | {mode} | {row} |")
    for name, value in RULER_ANCHORS.items():
        row = " | ".join(
            _num(value) if n == RULER_ANCHOR_LENGTH else "-" for n in lengths
        )
        lines.append(f"| NIAH average, {name} | memagent | {row} |")
    return lines


def draw_baselines(
    ax: Any, summary: dict[str, Any], label: str, paper_tokens: dict[int, int]
) -> None:
    """The baseline modes' RULER-HQA sub-EM on the RULER-HQA axes, at the
    context's length (the paper's length for N where no context was read)."""
    by_mode: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in summary.get("lengths", []):
        mode = r.get("mode", "memagent")
        x = r["mean_context_tokens"] or paper_tokens.get(r["length"])
        if mode != "memagent" and r["sub_em"] is not None and x:
            by_mode[mode].append((x, r["sub_em"]))
    for mode, pts in by_mode.items():
        ax.plot(
            *zip(*sorted(pts), strict=True),
            marker="x",
            lw=1.5,
            label=f"{label} [{mode}]",
        )


def draw_ruler(ax: Any, summary: dict[str, Any], label: str) -> None:
    """RULER averages per mode against length, with the paper's 512K NIAH points."""
    ruler = averages(summary.get("ruler", []))
    for (name, mode), by_n in sorted(ruler.items(), key=_mode_order):
        pts = sorted(by_n.items())
        style = "-" if name == "average" else ":"
        ax.plot(
            *zip(*pts, strict=True),
            ls=style,
            marker="o",
            label=f"{label} [{mode}] {name}",
        )
    for (name, value), marker in zip(RULER_ANCHORS.items(), "s^v", strict=True):
        ax.plot(
            [RULER_ANCHOR_LENGTH],
            [value],
            marker=marker,
            ls="",
            label=f"NIAH avg, {name}",
        )
    ax.set_xscale("log", base=2)
    ax.set_ylim(-2, 102)
    ax.set_xlabel("context length (tokens, log scale)")
    ax.set_ylabel("RULER score (%)")
    ax.set_title("RULER tasks")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(
        fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        ncol=1,
        frameon=False,
    )

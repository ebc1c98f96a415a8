"""Learning curves: training reward per step and held-out accuracy, from ``steps.jsonl``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from memagent_workflow.data.files import atomic_write


def read_steps(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The step lines of a ``steps.jsonl`` (a torn last line is skipped)."""
    lines = []
    for text in Path(path).read_text().splitlines():
        try:
            lines.append(json.loads(text))
        except ValueError:
            continue
    return lines


def series(steps: list[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    """``(step, value)`` pairs of the lines where ``key`` was measured."""
    points = [(s["step"], s[key]) for s in steps if s.get(key) is not None]
    return [p[0] for p in points], [p[1] for p in points]


def first_step_at(
    steps: list[dict[str, Any]], key: str, threshold: float
) -> dict[str, Any] | None:
    """The first line whose ``key`` reaches ``threshold`` (None if none does)."""
    return next((s for s in steps if (s.get(key) or 0) >= threshold), None)


def plot_curves(
    runs: dict[str, list[dict[str, Any]]],
    path: str | os.PathLike,
    chance: float | None = None,
    title: str = "Learning curve",
) -> Path:
    """One PNG: each run's training reward (thin) and held-out accuracy (dots)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for (label, steps), color in zip(runs.items(), colors * 4, strict=False):
        x, y = series(steps, "reward")
        ax.plot(x, y, color=color, lw=0.8, alpha=0.45)
        x, y = series(steps, "eval_reward")
        ax.plot(x, y, color=color, lw=2, marker="o", ms=3, label=label)
    if chance is not None:
        ax.axhline(chance, color="grey", ls="--", lw=1, label=f"chance ({chance:g})")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("training step")
    ax.set_ylabel("accuracy (thin: training reward)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="center right")
    fig.tight_layout()
    path = Path(path)
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)
    return path

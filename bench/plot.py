"""The loop benchmark's plot: episodes/s against the train/rollout ratio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.loop_config import ORIGINAL, label
from memagent_workflow.data.files import atomic_write

STYLE = {
    ORIGINAL: dict(color="black", marker="s", linestyle="--"),
    "0": dict(color="tab:gray", marker="o"),
    "1": dict(color="tab:blue", marker="^"),
    "2": dict(color="tab:orange", marker="v"),
    "4": dict(color="tab:green", marker="D"),
}


def plot_loop(result: dict[str, Any], path: Path) -> Path:
    """One panel per mix; one line per loop, plus the original at zero driver
    cost and the ideal (written atomically)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    mixes = list(dict.fromkeys(r["mix"] for r in rows))
    fig, axes = plt.subplots(1, len(mixes), figsize=(6 * len(mixes), 5), squeeze=False)
    for ax, mix in zip(axes[0], mixes, strict=True):
        mine = sorted((r for r in rows if r["mix"] == mix), key=lambda r: r["ratio"])
        x = [r["ratio"] for r in mine]
        for k in mine[0]["loops"]:
            y = [r["loops"][k]["episodes_per_s"] for r in mine]
            ax.plot(x, y, label=label(k), **STYLE.get(k, {}))
        zero = [r["predicted"]["original_zero_cost"] for r in mine]
        ax.plot(
            x, zero, label="original at zero driver cost", color="black", linestyle=":"
        )
        ideal = [r["predicted"]["ideal"] for r in mine]
        ax.plot(
            x, ideal, label="ideal (perfect overlap)", color="tab:red", linestyle=":"
        )
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [f"{v:g}" for v in x])
        ax.set_xlabel("train step time / synchronous rollout time")
        ax.set_ylabel("trained episodes / s (simulated)")
        ax.set_title(mix)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8)
    fig.suptitle("Training loop: AReaL's staleness bounds vs the original's schedule")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)
    return path

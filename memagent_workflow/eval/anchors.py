"""Published RULER-HQA rows shown beside a run (``results.md``, the plot).

RULER-HotpotQA sub-EM (%), 128 questions: the MemAgent paper's rows (v1, July
2025, and v2, ICLR 2026; one sample per question) and the slime-agentic 7B
reproduction (best of, and mean over, 5 runs), each with its source and what
the number is. None = no figure in the project's references; none is filled in.
No AReaL import here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

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
    return dict(zip(_N, values, strict=False))


def _at(**values: float) -> dict[int, float | None]:
    """A row published at some lengths only (``n50=80.47``); the rest None."""
    row = {n: None for n in _N}
    row.update({int(k[1:]): v for k, v in values.items()})
    return row


@dataclass(frozen=True)
class Anchor:
    """A published RULER-HQA row: sub-EM (%) per N, None where the references
    hold no figure. ``size``: the model size it is an anchor for (None: any);
    ``metric``: what the number is (compare a best-of-n row with ours)."""

    name: str
    source: str
    metric: str
    values: dict[int, float | None]
    size: str | None = None
    always: bool = False  # shown whatever the evaluated model

    @property
    def label(self) -> str:
        return f"{self.name} [{self.source}; {self.metric}]"


_V1 = "MemAgent paper v1 (arXiv 2507.02259v1)"
_V2 = "MemAgent paper v2 (ICLR 2026), Table 1"
_SLIME = "slime-agentic MemAgent example, Qwen2.5-7B-Instruct, iter 299"
ANCHOR_ROWS: tuple[Anchor, ...] = (
    Anchor(
        "RL-MemAgent-14B",
        _V1,
        "1 sample",
        _row(83.59, 82.03, 84.38, 80.47, 76.56, 81.25, 75.00, 77.34, 76.56, 78.12),
        "14B",
    ),
    Anchor(
        "RL-MemAgent-14B",
        _V2,
        "1 sample",
        _at(
            n50=80.47, n800=81.25, n3200=79.69, n6400=75.78, n12800=78.91, n25600=71.09
        ),
        "14B",
    ),
    Anchor(
        "RL-MemAgent-7B",
        _V1,
        "1 sample",
        _row(82.03, 79.69, 78.91, None, 79.69, None, 74.22, 76.56, 75.78, 71.09),
        "7B",
    ),
    Anchor(
        "RL-MemAgent-7B",
        _V2,
        "1 sample",
        _at(
            n50=81.25, n800=79.69, n3200=76.56, n6400=74.22, n12800=77.34, n25600=71.88
        ),
        "7B",
    ),
    Anchor(
        "slime-agentic 7B",
        _SLIME + " (README)",
        "best of 5 runs",
        _row(78.12, 76.56, 75.78, 74.22, 77.34, 72.66, 69.53),
        "7B",
        always=True,
    ),
    Anchor(
        "slime-agentic 7B",
        _SLIME + " (result files)",
        "mean of 5 runs",
        _row(75.31, 73.75, 74.22, 72.19, 73.13, 69.22, 68.28),
        "7B",
        always=True,
    ),
    Anchor(
        "Qwen2.5-7B-Instruct-1M",
        _V1,
        "1 sample",
        _row(61.72, 56.25, 53.91, 55.47, 51.56, 33.59, 12.50, 0.00, None, None),
        "7B",
    ),
)
NOT_IN_REFERENCES = (
    "-: no figure in this project's references (not published there, or not "
    "verified); none is filled in"
)


def model_size(model: str | None) -> str | None:
    """'14B' or '7B' from a model path or name (e.g. RL-MemAgent-14B), else None."""
    name = (model or "").rstrip("/").rsplit("/", 1)[-1]
    match = re.search(r"(?<![\d.])(7|14)b(?![a-z0-9])", name, re.IGNORECASE)
    return f"{match.group(1)}B" if match else None


def anchors_for_model(model: str | None) -> list[Anchor]:
    """The rows to show beside a run of ``model``: its size's paper rows (v1 and
    v2) and the slime-agentic 7B rows; every row if the size is unknown."""
    size = model_size(model)
    return [a for a in ANCHOR_ROWS if size is None or a.always or a.size == size]


def anchors_for(
    lengths: list[int], model: str | None = None
) -> dict[str, dict[str, Any]]:
    """The anchor rows for ``model`` restricted to ``lengths`` (JSON-friendly)."""
    return {
        a.label: {
            "model": a.name,
            "source": a.source,
            "metric": a.metric,
            "values": {str(n): a.values.get(n) for n in lengths},
        }
        for a in anchors_for_model(model)
    }

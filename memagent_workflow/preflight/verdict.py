"""The preflight's result: one row per check (check, found, needed, verdict)."""

from __future__ import annotations

import enum
import shutil
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass


class Verdict(enum.Enum):
    """How a check came out; only ``FAIL`` makes the preflight exit non-zero."""

    OK = "ok"
    WARN = "WARN"
    FAIL = "FAIL"
    NA = "n/a"


@dataclass(frozen=True)
class Check:
    """One row of the table, with what to do about it when it is not ok."""

    family: str
    name: str
    found: str
    needed: str
    verdict: Verdict
    fix: str = ""

    @property
    def label(self) -> str:
        return f"{self.family}: {self.name}"


def ok(family: str, name: str, found: str, needed: str) -> Check:
    return Check(family, name, found, needed, Verdict.OK)


def warn(family: str, name: str, found: str, needed: str, fix: str = "") -> Check:
    return Check(family, name, found, needed, Verdict.WARN, fix)


def fail(family: str, name: str, found: str, needed: str, fix: str = "") -> Check:
    return Check(family, name, found, needed, Verdict.FAIL, fix)


def not_applicable(family: str, name: str, why: str) -> Check:
    return Check(family, name, why, "-", Verdict.NA)


def blocking(checks: Iterable[Check]) -> list[Check]:
    """The checks that stop the run."""
    return [c for c in checks if c.verdict is Verdict.FAIL]


HEADER = ("check", "found", "needed", "verdict")


def render(checks: list[Check], width: int | None = None) -> str:
    """The table, cells wrapped to the terminal, then what to do per non-ok row."""
    width = width or max(100, shutil.get_terminal_size((120, 24)).columns)
    label_w = min(34, max(len(HEADER[0]), *(len(c.label) for c in checks)))
    verdict_w = len(HEADER[3])
    rest = max(40, width - label_w - verdict_w - 9)
    found_w = rest * 11 // 20
    needed_w = rest - found_w
    widths = (label_w, found_w, needed_w, verdict_w)

    def row(cells: tuple[str, ...]) -> list[str]:
        wrapped = [
            textwrap.wrap(c, w, break_on_hyphens=False) or [""]
            for c, w in zip(cells, widths, strict=True)
        ]
        height = max(len(w) for w in wrapped)
        return [
            " | ".join(
                (cell[i] if i < len(cell) else "").ljust(w)
                for cell, w in zip(wrapped, widths, strict=True)
            ).rstrip()
            for i in range(height)
        ]

    rule = "-+-".join("-" * w for w in widths)
    lines = [*row(HEADER), rule]
    for c in checks:
        lines += row((c.label, c.found, c.needed, c.verdict.value))
    advice = [c for c in checks if c.fix and c.verdict in (Verdict.FAIL, Verdict.WARN)]
    if advice:
        lines.append("")
        for c in advice:
            lines += textwrap.wrap(
                f"{c.verdict.value} {c.label}: {c.fix}",
                width,
                subsequent_indent="    ",
                break_on_hyphens=False,
            )
    bad = blocking(checks)
    lines.append("")
    if bad:
        lines.append(
            f"preflight: {len(bad)} blocking item(s): "
            + "; ".join(c.label for c in bad)
        )
    else:
        warned = sum(c.verdict is Verdict.WARN for c in checks)
        lines.append(f"preflight: no blocking item ({warned} warning(s))")
    return "\n".join(lines)

"""The smoke's phase events: what a child process (a training run, its resume,
the eval) writes as it goes, and what the parent reads to know the phase each
child is in, for its deadline and for the table.

One JSON line per event, ``{"run", "phase", "event": "start"|"end", "t", "n"}``
(``n``: the how-many-th time this phase ran in this run; an end also carries
``seconds`` and any details), appended to the file ``EVENTS_ENV`` names. Only
rank 0 writes; without ``EVENTS_ENV`` nothing is written (a run outside a
smoke).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EVENTS_ENV = "MEMAGENT_SMOKE_EVENTS"  # the events file, set by the parent
RUN_ENV = "MEMAGENT_SMOKE_RUN"  # train, resume or eval
# Each child's first phase, opened as the child starts.
FIRST_PHASE = {"train": "launch", "resume": "resume", "eval": "eval"}


@dataclass
class EventLog:
    """A child's writer: phases as they start and end."""

    path: str | None
    run: str
    counts: Counter = field(default_factory=Counter)
    open: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_env(cls) -> EventLog:
        """This process's log (one per process: a phase the child's entry
        opens, its trainer closes)."""
        global _OWN
        if _OWN is None:
            rank0 = int(os.environ.get("RANK", "0")) == 0
            path = os.environ.get(EVENTS_ENV) if rank0 else None
            _OWN = cls(path, os.environ.get(RUN_ENV, ""))
        return _OWN

    def _write(self, **event: Any) -> None:
        if self.path is None:
            return
        with open(self.path, "a") as f:
            f.write(json.dumps({"run": self.run, **event}) + "\n")

    def start(self, phase: str) -> None:
        self.counts[phase] += 1
        self.open[phase] = time.time()
        self._write(
            phase=phase, event="start", t=self.open[phase], n=self.counts[phase]
        )

    def end(self, phase: str, **detail: Any) -> None:
        started = self.open.pop(phase, None)
        if started is None:
            return
        now = time.time()
        self._write(
            phase=phase, event="end", t=now, n=self.counts[phase],
            seconds=now - started, **detail,
        )  # fmt: skip

    def switch(self, ended: str, started: str) -> None:
        self.end(ended)
        self.start(started)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self.start(name)
        yield
        self.end(name)


_OWN: EventLog | None = None


@dataclass(frozen=True)
class Event:
    run: str
    phase: str
    event: str
    t: float
    n: int
    seconds: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)


def read_events(path: str | Path) -> list[Event]:
    """Every complete line of the events file (a line being written is skipped)."""
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        return []
    found = []
    for line in lines:
        try:
            raw = json.loads(line)
        except json.JSONDecodeError:
            continue
        keys = ("run", "phase", "event", "t", "n", "seconds")
        detail = {k: v for k, v in raw.items() if k not in keys}
        found.append(
            Event(raw["run"], raw["phase"], raw["event"], raw["t"], raw["n"],
                  raw.get("seconds"), detail)
        )  # fmt: skip
    return found


def open_phase(events: list[Event], run: str) -> tuple[str, float] | None:
    """The phase a run is in (started, not ended) and when it started."""
    started: dict[tuple[str, int], float] = {}
    for e in events:
        if e.run != run:
            continue
        if e.event == "start":
            started[(e.phase, e.n)] = e.t
        else:
            started.pop((e.phase, e.n), None)
    if not started:
        return None
    (phase, _), t = max(started.items(), key=lambda kv: kv[1])
    return phase, t


def last_ended(events: list[Event], run: str) -> Event | None:
    ends = [e for e in events if e.run == run and e.event == "end"]
    return ends[-1] if ends else None

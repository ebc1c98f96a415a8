"""A record of the weight updates the stand-in received, one entry per sync.

AReaL's trainer pauses generation, sends one step's weights (one disk load, or
one distributed request per bucket) and resumes; the requests between a pause
and the next resume form one sync. An update that arrives while generation
runs is a sync of its own. Stand-in only: tests read it from
``/get_server_info`` (``weight_syncs``) to check what reached the server.
"""

from __future__ import annotations

import threading
from typing import Any


class WeightLog:
    """Weight updates grouped into syncs (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._syncs: list[dict[str, Any]] = []
        self._open: dict[str, Any] | None = None
        self._paused = False

    def paused(self) -> None:
        with self._lock:
            self._paused = True

    def resumed(self) -> None:
        with self._lock:
            self._paused = False
            if self._open is not None:
                self._syncs.append(self._open)
                self._open = None

    def record(self, source: str, names: list[str], dtypes: list[str]) -> None:
        """One applied update request (``disk`` or ``distributed``)."""
        with self._lock:
            sync = self._open or {
                "source": source,
                "requests": 0,
                "tensors": 0,
                "names": set(),
                "dtypes": set(),
            }
            if sync["source"] != source:
                sync["source"] = "mixed"
            sync["requests"] += 1
            sync["tensors"] += len(names)
            sync["names"].update(names)
            sync["dtypes"].update(dtypes)
            if self._paused:
                self._open = sync
            else:
                self._syncs.append(sync)

    @property
    def n_syncs(self) -> int:
        with self._lock:
            return len(self._syncs)

    def summary(self) -> list[dict[str, Any]]:
        """Completed syncs: source, requests, tensors, distinct names, dtypes."""
        with self._lock:
            return [
                {
                    "source": s["source"],
                    "requests": s["requests"],
                    "tensors": s["tensors"],
                    "distinct_tensors": len(s["names"]),
                    "dtypes": sorted(s["dtypes"]),
                }
                for s in self._syncs
            ]

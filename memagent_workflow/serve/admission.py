"""Admission: at most ``serve.max_episodes`` episodes in flight, at most
``serve.max_queue`` requests waiting for one; past both, 429 with
``Retry-After``. A request cancelled while it waits (its client gone) leaves
the queue; one cancelled while it runs frees its slot.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from memagent_workflow.serve.shapes import ServeError

_RECENT = 32  # episodes whose durations estimate Retry-After


class Admission:
    """A cap on episodes in flight and a bounded queue in front of it."""

    def __init__(self, max_running: int, max_queued: int):
        self.max_running = max_running
        self.max_queued = max_queued
        self.running = 0
        self.queued = 0
        self._slots = asyncio.Semaphore(max_running)
        self._durations: deque[float] = deque(maxlen=_RECENT)

    def retry_after(self) -> int:
        """Seconds until a slot is likely free: the recent mean episode time
        times the queue ahead per slot, at least 1."""
        if not self._durations:
            return 1
        mean = sum(self._durations) / len(self._durations)
        ahead = (self.queued + self.running) / self.max_running
        return max(1, math.ceil(mean * ahead))

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one episode slot; waits in the queue, or 429 when it is full."""
        if self.running >= self.max_running and self.queued >= self.max_queued:
            raise ServeError(
                429,
                f"{self.running} episodes are running and {self.queued} requests "
                f"wait (serve.max_episodes={self.max_running}, "
                f"serve.max_queue={self.max_queued}); retry later",
                code="rate_limit_exceeded",
                type="rate_limit_error",
                headers={"Retry-After": str(self.retry_after())},
            )
        self.queued += 1
        try:
            await self._slots.acquire()
        finally:
            self.queued -= 1
        self.running += 1
        start = time.monotonic()
        try:
            yield
        finally:
            self.running -= 1
            self._slots.release()
            self._durations.append(time.monotonic() - start)

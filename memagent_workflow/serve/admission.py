"""Admission: at most ``serve.max_episodes`` episodes in flight, at most
``serve.max_queue`` requests (and ``serve.max_queue_bytes`` of their bodies)
waiting for one; past either, 429 with ``Retry-After``. A request cancelled
while it waits (its client gone) leaves the queue at once; one cancelled while
it runs frees its slot. Once closed (the service stopping), every waiting
request and every new one is answered 503.
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


def shutting_down() -> ServeError:
    return ServeError(
        503,
        "the service is stopping; retry on another instance or once it is back",
        code="shutting_down",
    )


class Admission:
    """A cap on episodes in flight and a bounded queue in front of it."""

    def __init__(
        self, max_running: int, max_queued: int, max_queued_bytes: int = 1 << 62
    ):
        self.max_running = max_running
        self.max_queued = max_queued
        self.max_queued_bytes = max_queued_bytes
        self.running = 0
        self.queued = 0
        self.queued_bytes = 0
        self._slots = asyncio.Semaphore(max_running)
        self._closed = asyncio.Event()
        self._durations: deque[float] = deque(maxlen=_RECENT)

    def retry_after(self) -> int:
        """Seconds until a slot is likely free: the recent mean episode time
        times the queue ahead per slot, at least 1."""
        if not self._durations:
            return 1
        mean = sum(self._durations) / len(self._durations)
        ahead = (self.queued + self.running) / self.max_running
        return max(1, math.ceil(mean * ahead))

    def close(self) -> None:
        """Answer every waiting request, and every new one, 503."""
        self._closed.set()

    def busy(self, message: str) -> ServeError:
        return ServeError(
            429,
            message,
            code="rate_limit_exceeded",
            type="rate_limit_error",
            headers={"Retry-After": str(self.retry_after())},
        )

    def admit(self, n_bytes: int) -> None:
        """429 if a request of ``n_bytes`` would pass the queue's bounds."""
        if self._closed.is_set():
            raise shutting_down()
        if self.running < self.max_running:
            return
        if self.queued >= self.max_queued:
            raise self.busy(
                f"{self.running} episodes are running and {self.queued} requests "
                f"wait (serve.max_episodes={self.max_running}, "
                f"serve.max_queue={self.max_queued}); retry later"
            )
        if self.queued_bytes + n_bytes > self.max_queued_bytes:
            raise self.busy(
                f"the queue holds {self.queued_bytes} bytes of requests; this one's "
                f"{n_bytes} would pass serve.max_queue_bytes={self.max_queued_bytes}; "
                "retry later"
            )

    async def _acquire(self) -> None:
        """A slot, or 503 once closed; cancelled: no slot is kept."""
        if not self._slots.locked():  # a free slot: taken without waiting
            await self._slots.acquire()
            return
        acquire = asyncio.ensure_future(self._slots.acquire())
        closed = asyncio.ensure_future(self._closed.wait())
        try:
            await asyncio.wait({acquire, closed}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            closed.cancel()
            if acquire.done() and not acquire.cancelled():
                self._slots.release()
            acquire.cancel()
            raise
        closed.cancel()
        if acquire.done():
            if not self._closed.is_set():
                return
            self._slots.release()
        acquire.cancel()
        raise shutting_down()

    @asynccontextmanager
    async def slot(self, n_bytes: int = 0) -> AsyncIterator[None]:
        """Hold one episode slot; waits in the queue, or 429 when it is full."""
        self.admit(n_bytes)
        self.queued += 1
        self.queued_bytes += n_bytes
        try:
            await self._acquire()
        finally:
            self.queued -= 1
            self.queued_bytes -= n_bytes
        self.running += 1
        start = time.monotonic()
        try:
            yield
        finally:
            self.running -= 1
            self._slots.release()
            self._durations.append(time.monotonic() - start)

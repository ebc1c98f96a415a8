"""Whether the model servers answer: each server's ``/health`` probed every
``serve.probe_interval_s``; after ``serve.probe_failures`` failures in a row
the engine is known down, with the cause in words. While it is down
``/health`` is 503, new requests are 503 at once, and calls in flight are
given up on. A server the service launched itself is then started again (at
most ``serve.max_restarts`` times, a log line each); one named by address is
probed until it answers, and used again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import aiohttp
from areal.utils import logging

from memagent_workflow.serve.shapes import ServeError

logger = logging.getLogger("MemAgentServe")
Probe = Callable[[str], Awaitable[str | None]]  # None: it answered; else the cause


def http_probe(timeout_s: float) -> Probe:
    """``GET http://ADDR/health``, in words when it fails."""

    async def probe(addr: str) -> str | None:
        url = f"http://{addr}/health"
        try:
            async with (
                aiohttp.ClientSession(
                    timeout=aiohttp.ClientTimeout(total=timeout_s)
                ) as session,
                session.get(url) as reply,
            ):
                if reply.status == 200:
                    return None
                return f"the model server at {addr} answered /health with HTTP {reply.status}"
        except TimeoutError:
            return f"the model server at {addr} did not answer within {timeout_s:g} s"
        except aiohttp.ClientConnectorError:
            return f"the model server at {addr} refused the connection"
        except aiohttp.ClientError as exc:
            return f"the model server at {addr} failed ({type(exc).__name__})"

    return probe


class EngineHealth:
    """The engine's state as the probes see it, and its recovery."""

    def __init__(
        self,
        addresses: Callable[[], list[str]],
        probe: Probe,
        interval_s: float,
        failures: int,
        restart: Callable[[], Awaitable[None]] | None = None,
        max_restarts: int = 0,
    ):
        self.addresses, self.probe = addresses, probe
        self.interval_s, self.failures = interval_s, failures
        self.restart, self.max_restarts = restart, max_restarts
        self.failed = 0  # probes failed in a row
        self.cause: str | None = None  # set while the engine is known down
        self.restarts = 0
        self._down = asyncio.Event()

    @property
    def up(self) -> bool:
        return self.cause is None

    def check_up(self) -> None:
        """503 at once while the engine is known down."""
        if self.cause is not None:
            raise ServeError(
                503,
                f"{self.cause}; the service answers again once it is back "
                "(GET /health)",
                code="engine_unavailable",
                headers={"Retry-After": str(max(1, round(self.interval_s)))},
            )

    async def went_down(self) -> None:
        """Returns once the engine is known down."""
        await self._down.wait()

    def report(self) -> dict[str, object]:
        out: dict[str, object] = {"engine": "ok" if self.up else "down"}
        if not self.up:
            out["cause"] = self.cause
        if self.failed:
            out["failed_probes"] = self.failed  # in a row, to this moment
        if self.restarts:
            out["engine_restarts"] = self.restarts
        return out

    async def probe_once(self) -> None:
        """One probe of every server; the state follows its result."""
        causes = [
            c for c in await asyncio.gather(*map(self.probe, self.addresses())) if c
        ]
        if not causes:
            if self.cause is not None:
                logger.info("the model servers answer again: serving")
            self.failed, self.cause = 0, None
            self._down.clear()
            return
        self.failed += 1
        if self.failed < self.failures:
            return
        if self.cause is None:
            logger.warning(f"the engine is down: {causes[0]}")
        self.cause = causes[0]
        self._down.set()
        if self.failed == self.failures:  # again after each restart that failed
            await self.recover()

    async def recover(self) -> None:
        """Start the launched servers again, if the service launched them."""
        if self.restart is None:
            return
        if self.restarts >= self.max_restarts:
            logger.error(
                f"the engine is down and serve.max_restarts={self.max_restarts} "
                "restarts are used: it stays down"
            )
            return
        self.restarts += 1
        logger.warning(
            f"restarting the model servers ({self.restarts} of "
            f"serve.max_restarts={self.max_restarts}): {self.cause}"
        )
        try:
            await self.restart()
        except Exception as exc:
            logger.exception(f"the restart failed: {exc}")
            return
        self.failed = 0  # probed from scratch: the next probe says if it answers

    async def run(self) -> None:
        """Probe until cancelled."""
        while True:
            try:
                await self.probe_once()
            except Exception:  # a probe's own fault: logged, probing goes on
                logger.exception("probing the model servers failed")
            await asyncio.sleep(self.interval_s)

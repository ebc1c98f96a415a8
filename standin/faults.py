"""Fault injection and an event log for the CPU stand-in server (tests only).

``--faults error=0.04,reset=0.03,delay=0.03,delay_s=6,seed=1`` makes that
fraction of ``/generate`` calls fail, each way SGLang or the network can:

* ``error``: answered 500 with an SGLang-style error body, nothing generated;
* ``reset``: generated, then the connection is cut halfway through the body;
* ``delay``: answered only after ``delay_s`` seconds (set it past the client's
  ``rollout.request_timeout`` to model a stalled server).

Which calls fail is drawn from ``seed`` in arrival order. ``--event-log PATH``
appends one JSON line per POST request (time, path, status, injected fault;
for weight updates the model path and the sha256 of the weights then served,
a stand-in-only probe), for tests that check what the server saw and when.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, fields
from typing import Any

from aiohttp import web

logger = logging.getLogger("StandinFaults")

KINDS = ("error", "reset", "delay")
_pending: set[asyncio.Task] = set()  # background event writes, kept referenced
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class FaultPlan:
    """Fractions of ``/generate`` calls to fail, by kind."""

    error: float = 0.0
    reset: float = 0.0
    delay: float = 0.0
    delay_s: float = 0.0
    seed: int = 0

    def __post_init__(self):
        for kind in KINDS:
            if not 0.0 <= getattr(self, kind) <= 1.0:
                raise ValueError(
                    f"--faults {kind}={getattr(self, kind)}: not in [0, 1]"
                )
        if self.total > 1.0:
            raise ValueError(f"--faults: fractions add up to {self.total} > 1")
        if self.delay > 0 and self.delay_s <= 0:
            raise ValueError("--faults delay needs delay_s > 0 (seconds)")
        self._rng = random.Random(self.seed)

    @property
    def total(self) -> float:
        return sum(getattr(self, kind) for kind in KINDS)

    @classmethod
    def parse(cls, spec: str) -> FaultPlan:
        """``"error=0.05,reset=0.02,delay=0.03,delay_s=6,seed=1"`` (any subset)."""
        known = {f.name: f.type for f in fields(cls)}
        values: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            key, sep, value = part.partition("=")
            if not sep or key not in known:
                raise ValueError(
                    f"--faults {spec!r}: bad item {part!r}; expected key=value "
                    f"with key in {sorted(known)}"
                )
            try:
                values[key] = int(value) if key == "seed" else float(value)
            except ValueError:
                raise ValueError(f"--faults {key}={value!r}: not a number") from None
        return cls(**values)

    def draw(self) -> str | None:
        """The fault for the next call, or None."""
        x = self._rng.random()
        for kind in KINDS:
            x -= getattr(self, kind)
            if x < 0:
                return kind
        return None


# The generation and disk-update paths of both protocols (SGLang's, vLLM's).
GENERATE_PATHS = ("/generate", "/v1/completions")
DISK_UPDATE_PATHS = ("/update_weights_from_disk", "/areal_update_weights")


def fault_middleware(plan: FaultPlan) -> Any:
    """aiohttp middleware that fails ``/generate`` calls as ``plan`` says."""

    @web.middleware
    async def inject(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path not in GENERATE_PATHS:
            return await handler(request)
        kind = plan.draw()
        request["fault"] = kind
        if kind == "error":
            await request.read()
            return web.json_response(
                {"error": {"message": "injected fault: server error", "code": 500}},
                status=500,
            )
        if kind == "delay":
            await asyncio.sleep(plan.delay_s)
            return await handler(request)
        response = await handler(request)
        if kind == "reset" and isinstance(response, web.Response):
            return await _cut_short(request, response)
        return response

    return inject


async def _cut_short(request: web.Request, response: web.Response) -> web.Response:
    """Send the headers and half the body, then drop the connection."""
    body = response.body or b""
    stream = web.StreamResponse(status=response.status, headers=response.headers)
    stream.content_length = len(body)
    await stream.prepare(request)
    await stream.write(bytes(body[: len(body) // 2]))
    if request.transport is not None:
        request.transport.abort()
    raise ConnectionResetError("injected fault: connection reset mid-response")


class EventLog:
    """Appends one JSON line per event; readable while the server runs."""

    def __init__(self, path: str):
        self.path = path

    def write(self, **event: Any) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(event) + "\n")


def event_middleware(
    log: EventLog, digest: Callable[[], Awaitable[tuple[str, str]]]
) -> Any:
    """aiohttp middleware logging every POST (and the weights after an update).

    ``digest()``: the path the served weights were loaded from and their sha256.
    """

    async def log_with_digest(event: dict[str, Any]) -> None:
        event["model_path"], event["digest"] = await digest()
        log.write(**event)

    @web.middleware
    async def record(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method != "POST":
            return await handler(request)
        event: dict[str, Any] = {"t": time.time(), "path": request.path}
        try:
            response = await handler(request)
        except BaseException as exc:
            event.update(status=None, fault=request.get("fault"), error=repr(exc))
            log.write(**event)
            raise
        event.update(
            status=response.status, fault=request.get("fault"), t_done=time.time()
        )
        if request.path in DISK_UPDATE_PATHS and response.status == 200:
            # Off the response path: the digest runs in the engine thread after
            # the update, before any later one, and must not delay the answer.
            task = asyncio.get_running_loop().create_task(log_with_digest(event))
            _pending.add(task)
            task.add_done_callback(_pending.discard)
        else:
            log.write(**event)
        return response

    return record


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--faults",
        default="",
        help="fail this fraction of /generate calls (tests only), e.g. "
        "error=0.04,reset=0.03,delay=0.03,delay_s=6,seed=1",
    )
    ap.add_argument(
        "--event-log", default="", help="append one JSON line per POST request here"
    )


def middlewares(
    args: argparse.Namespace, digest: Callable[[], Awaitable[tuple[str, str]]]
) -> list:
    """The middlewares ``args`` ask for (the event log outermost)."""
    out = []
    if args.event_log:
        out.append(event_middleware(EventLog(args.event_log), digest))
    if args.faults:
        plan = FaultPlan.parse(args.faults)
        logger.warning(f"FAULT INJECTION ON: {plan}")
        out.append(fault_middleware(plan))
    return out

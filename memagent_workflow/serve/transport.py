"""A request as it arrives and leaves: its body read within its limit and
parsed off the event loop when large, its client watched for a disconnect,
its one log line.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

from areal.utils import logging
from starlette.requests import Request

from memagent_workflow.serve.limits import Limits
from memagent_workflow.serve.shapes import bad_request

logger = logging.getLogger("MemAgentServe")
T = TypeVar("T")
GONE = "499 client disconnected"
INLINE_BYTES = 64 << 10  # bodies up to this are parsed on the event loop


class ClientGone(Exception):
    """The client disconnected before its reply was ready."""


@dataclass
class RequestLog:
    """The one log line of a request: id, document tokens, chunks, seconds, outcome."""

    rid: str
    start: float
    outcome: str = "500 unfinished"
    tokens: int | None = None
    chunks: int | None = None

    def write(self) -> None:
        tokens = "-" if self.tokens is None else self.tokens
        chunks = "-" if self.chunks is None else self.chunks
        seconds = time.perf_counter() - self.start
        logger.info(
            f"request {self.rid}: {self.outcome}; {tokens} document tokens, "
            f"{chunks} chunks, {seconds:.2f} s"
        )


async def wait_disconnect(receive: Any) -> None:
    """Returns once the client has gone (ASGI's ``http.disconnect``)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def guarded(request: Request, work: Awaitable[T]) -> T:
    """``work``'s result; cancelled (`ClientGone`) if the client disconnects
    first, whether ``work`` waits in the queue or runs."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(wait_disconnect(request.receive))
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result()
        raise ClientGone
    finally:
        task.cancel()
        gone.cancel()
        await asyncio.gather(task, gone, return_exceptions=True)


async def read_body(request: Request, limits: Limits) -> bytes:
    """The body, refused past ``serve.max_body_bytes`` as it arrives."""
    length = request.headers.get("content-length", "")
    if length.isdigit():
        limits.body(int(length))
    data = bytearray()
    async for piece in request.stream():
        data += piece
        limits.body(len(data))
    return bytes(data)


def parse_json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:
        raise bad_request(
            f"the body is not JSON: {exc}", None, "invalid_json"
        ) from None


async def read_json(data: bytes) -> Any:
    """``data`` as JSON; a large body is parsed in a thread, so that other
    requests' events keep flowing meanwhile."""
    if len(data) <= INLINE_BYTES:
        return parse_json(data)
    return await asyncio.to_thread(parse_json, data)

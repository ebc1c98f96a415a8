"""JSON request and reply helpers of the stand-in server, in SGLang's shapes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from aiohttp import web


def error(status: int, message: str) -> web.Response:
    """``/generate``-style error: ``{"error": {"message", "code"}}``."""
    return web.json_response(
        {"error": {"message": message, "code": status}}, status=status
    )


def fail(status: int, message: str) -> web.Response:
    """Control-endpoint failure: ``{"success": false, "message"}``."""
    return web.json_response({"success": False, "message": message}, status=status)


def ok(message: str = "", **extra: Any) -> web.Response:
    return web.json_response({"success": True, "message": message, **extra})


async def json_body(request: web.Request) -> dict[str, Any]:
    """The request's JSON object ({} without a body); ``ValueError`` if not one."""
    if not request.can_read_body:
        return {}
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"request body is not valid JSON: {e}") from e
    if not isinstance(body, dict):
        raise ValueError("request body must be a JSON object")
    return body


def until_done(
    loop: asyncio.AbstractEventLoop,
) -> tuple[asyncio.Future, Callable[[Any], None]]:
    """A future and the engine-thread callback that resolves it with the
    finished request (a ``GenRequest``'s ``on_done``)."""
    fut: asyncio.Future = loop.create_future()

    def _resolve(r: Any) -> None:
        if not fut.done():
            fut.set_result(r)

    return fut, lambda r: loop.call_soon_threadsafe(_resolve, r)


async def served(engine: Any, req: Any, fut: asyncio.Future) -> None:
    """Submit ``req`` to the engine thread and wait for ``fut`` (`until_done`);
    a client that goes away marks the request cancelled for the engine."""
    engine.submit(req)
    try:
        await fut
    except asyncio.CancelledError:
        req.cancelled = True
        raise

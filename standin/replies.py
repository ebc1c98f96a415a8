"""JSON request and reply helpers of the stand-in server, in SGLang's shapes."""

from __future__ import annotations

import json
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

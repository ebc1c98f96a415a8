"""A JSON call to a test's server, as AReaL's client makes it (tests only)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request


def call(
    server,
    endpoint: str,
    body=None,
    timeout: float = 60.0,
    method: str | None = None,
    raw: bytes | None = None,
) -> tuple[int, dict]:
    """The status and JSON reply (error replies included) of one call: GET, or
    POST when ``body`` (JSON) or ``raw`` (bytes as they are) is given."""
    data = (
        raw if raw is not None else None if body is None else json.dumps(body).encode()
    )
    req = urllib.request.Request(
        server.url + endpoint,
        data=data,
        method=method or ("GET" if data is None else "POST"),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())

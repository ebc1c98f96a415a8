"""Who may call the service: loopback by default; any other address only with
an API key, which every ``/v1`` request must then send as ``Authorization:
Bearer KEY`` (401 otherwise)."""

from __future__ import annotations

import hmac
import ipaddress
import os

from memagent_workflow.serve.shapes import ServeError

KEY_ENV = "MEMAGENT_API_KEY"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``localhost``, 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def api_key(flag: str | None) -> str | None:
    """The key: ``--api-key``, else ``MEMAGENT_API_KEY``; None: no key."""
    key = flag if flag is not None else os.environ.get(KEY_ENV)
    return key or None


def check_bind(host: str, key: str | None) -> None:
    """Refuse to listen beyond loopback without a key (ValueError, naming both)."""
    if key is None and not is_loopback(host):
        raise ValueError(
            f"serve.host={host} is not a loopback address: set an API key "
            f"({KEY_ENV}=... or --api-key) so that only its holders are served, "
            "or listen on 127.0.0.1"
        )


def check_authorization(header: str | None, key: str | None) -> None:
    """401 unless ``header`` is ``Bearer KEY`` (nothing is checked without a key)."""
    if key is None:
        return
    scheme, _, given = (header or "").partition(" ")
    if scheme.lower() != "bearer" or not given:
        raise ServeError(
            401,
            "Missing API key: send it as 'Authorization: Bearer KEY'",
            code="invalid_api_key",
        )
    if not hmac.compare_digest(given.strip().encode(), key.encode()):
        raise ServeError(401, "Incorrect API key provided", code="invalid_api_key")

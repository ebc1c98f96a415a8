"""Who may call the service: loopback by default; any other address only with
an API key, which every ``/v1`` request must then send as ``Authorization:
Bearer KEY`` (401 otherwise)."""

from __future__ import annotations

import hmac
import ipaddress
import os
from pathlib import Path

from memagent_workflow.serve.shapes import ServeError

KEY_ENV = "MEMAGENT_API_KEY"
KEY_FILE_ENV = "MEMAGENT_API_KEY_FILE"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``localhost``, 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def api_key(key_file: str | None) -> str | None:
    """The key: the first line of ``key_file`` (``--api-key-file``, else
    ``MEMAGENT_API_KEY_FILE``), else ``MEMAGENT_API_KEY``; None: no key. Never
    a command-line value, which ``ps`` would show."""
    path = key_file or os.environ.get(KEY_FILE_ENV)
    if path:
        try:
            lines = Path(path).read_text().splitlines()
        except OSError as exc:
            raise ValueError(f"the API key file {path}: {exc.strerror}") from None
        key = lines[0].strip() if lines else ""
        if not key:
            raise ValueError(f"the API key file {path} is empty")
        return key
    return os.environ.get(KEY_ENV) or None


def check_bind(host: str, key: str | None) -> None:
    """Refuse to listen beyond loopback without a key (ValueError, naming both)."""
    if key is None and not is_loopback(host):
        raise ValueError(
            f"serve.host={host} is not a loopback address: set an API key "
            f"({KEY_ENV}=..., or a file: --api-key-file or {KEY_FILE_ENV}) so that only its holders are served, "
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

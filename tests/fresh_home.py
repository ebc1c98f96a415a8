"""The tests run as a new user would: a fresh, empty ``HOME`` per test process.

A green run must not lean on what the machine's own user has: Ray's
``~/.ray/auth_token`` (Ray 2.60 turns token authentication on by itself when it
exists, and the docs' two-node block failed without it), the Hugging Face
cache, configs under ``~/.config``. So each pytest process (the controller
and each xdist worker, which run tests one at a time) gets its own empty
``HOME``, which every process a test starts inherits, and the variables that
would point past it (``XDG_*``, ``HF_HOME``, Ray's token variables) are
dropped. Only uv's package cache is kept (``UV_CACHE_DIR``): the docs'
``uv run`` commands find the project's environment as it is.
``MEMAGENT_KEEP_HOME=1`` keeps the caller's ``HOME`` (to debug a test with
one's own state).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile

#: The processes' own HOME, set by the process that made it (xdist workers
#: inherit the controller's environment: each makes its own).
OWNER_ENV = "MEMAGENT_FRESH_HOME_OF"
PER_USER = (
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "HF_HOME",
    "HF_HUB_CACHE",
    "TRANSFORMERS_CACHE",
    "RAY_AUTH_TOKEN",
    "RAY_AUTH_TOKEN_PATH",
)


def uv_cache_dir() -> str | None:
    """uv's package cache as the caller's ``HOME`` places it (None: no uv)."""
    if cache := os.environ.get("UV_CACHE_DIR"):
        return cache
    try:
        done = subprocess.run(
            ["uv", "cache", "dir"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def use_fresh_home() -> str | None:
    """Point ``HOME`` at a new empty folder for this process (removed at its
    exit); returns it (None when ``MEMAGENT_KEEP_HOME=1`` or already done)."""
    owner = os.environ.get("PYTEST_XDIST_WORKER", "controller")
    if os.environ.get("MEMAGENT_KEEP_HOME") == "1":
        return None
    if os.environ.get(OWNER_ENV) == f"{os.getpid()}:{owner}":
        return None
    if cache := uv_cache_dir():
        os.environ["UV_CACHE_DIR"] = cache
    home = tempfile.mkdtemp(prefix=f"memagent-home-{owner}-")
    for name in PER_USER:
        os.environ.pop(name, None)
    os.environ["HOME"] = home
    os.environ[OWNER_ENV] = f"{os.getpid()}:{owner}"
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    return home

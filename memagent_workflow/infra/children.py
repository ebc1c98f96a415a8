"""Child processes that do not outlive their parent, and their stop.

`die_with_parent` runs in a child between fork and exec (``preexec_fn``): the
kernel sends the child SIGTERM when the thread that started it dies, however
it dies (SIGKILL included), so no daemon or launch is left behind by a parent
that could not clean up. `stop_children` is the clean stop.
"""

from __future__ import annotations

import ctypes
import signal
import subprocess

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent() -> None:
    """In a child, before exec: SIGTERM it when its parent dies."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def stop_children(procs: list[subprocess.Popen], grace_s: float = 30.0) -> None:
    """Terminate ``procs`` (the last started first); kill any still up after
    ``grace_s``."""
    for proc in reversed(procs):
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

"""Test files that time something run alone (issue 53, point 4).

Under the README's ``-n auto`` the suite runs a file per worker, a worker more
than the cores: a file that compares two timings would meet whatever its
neighbours happen to run, and the two timings would agree only under like load.
A file that sets ``RUNS_ALONE = True`` takes this lock exclusively for its whole
run; every other file takes it shared. Its waiting holds a turnstile that no new
file passes, so it starts as soon as the files already running have ended (a
reader-writer lock: ``flock`` alone would let the other workers' next files
overtake it for ever).

The lock is a file in the run's shared folder (``conftest.shared_dir``): every
worker of one run sees it; another run's workers (another folder) do not.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def wants_alone(module: Any) -> bool:
    """Whether a test module runs alone (it sets ``RUNS_ALONE = True``)."""
    return bool(getattr(module, "RUNS_ALONE", False))


@contextlib.contextmanager
def file_lock(folder: Path, alone: bool) -> Iterator[None]:
    """Hold the run's lock in ``folder``: exclusively when ``alone``, else shared."""
    folder.mkdir(parents=True, exist_ok=True)
    with (
        open(folder / "turnstile.lock", "a") as turnstile,
        open(folder / "runs_alone.lock", "a") as lock,
    ):
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)

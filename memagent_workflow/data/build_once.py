"""Build-once folders: built on first use, reused while their key matches.

Several processes may ask for the same folder at the same moment (a benchmark's
workers, two runs side by side). One of them builds, under a file lock beside
the folder; the others wait on the lock and then reuse its build. The build is
written into a temporary sibling folder (``.NAME.*.building``), its marker
(the key, as JSON) last, and renamed into place whole, so a finished-looking
folder is always a finished build. A builder killed mid-build leaves only its
``.building`` folder, which the next builder (holding the lock, so alone)
removes; the lock itself is the kernel's and dies with its holder.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from areal.utils import logging
from filelock import FileLock, Timeout

logger = logging.getLogger("BuildOnce")

#: Default name of the marker file that holds a build's key.
MARKER = "build.json"


def lock_path(out: Path) -> Path:
    """The lock file that serialises builds of ``out``."""
    return out.parent / f".{out.name}.lock"


def is_built(
    out: str | os.PathLike,
    key: Any,
    marker: str = MARKER,
    required: Iterable[str] = (),
) -> bool:
    """Whether ``out`` holds a finished build of ``key`` (and its ``required`` files)."""
    out = Path(out)
    path = out / marker
    if not path.is_file() or not all((out / f).is_file() for f in required):
        return False
    try:
        return json.loads(path.read_text()) == key
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def exclusive(lock_file: str | os.PathLike, doing: str) -> Iterator[None]:
    """Hold the file lock ``lock_file`` (saying so while another process holds
    it). The kernel releases it if this process dies."""
    lock = FileLock(lock_file)
    try:
        lock.acquire(timeout=1)
    except Timeout:
        logger.info(f"Another process is {doing}; waiting for it")
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def build_once(
    out: str | os.PathLike,
    key: Any,
    write: Callable[[Path], None],
    *,
    marker: str = MARKER,
    required: Iterable[str] = (),
    overwrite: bool = False,
    what: str = "cached folder",
) -> Path:
    """``write(folder)`` a build of ``key`` into ``out`` unless one is there.

    Safe when several processes call it at once: exactly one builds, the others
    wait and reuse its result. A build with another key is replaced; a
    non-empty ``out`` that holds no marker is refused (unless ``overwrite``),
    so a user's folder is never deleted by mistake. ``what`` names the build in
    log messages.
    """
    out = Path(out)
    required = tuple(required)
    if not overwrite and is_built(out, key, marker, required):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(lock_path(out), f"building the {what} in {out}"):
        if not overwrite and is_built(out, key, marker, required):
            logger.info(f"Reusing the {what} in {out}")
            return out
        if out.exists() and any(out.iterdir()) and not (out / marker).exists():
            if not overwrite:
                raise FileExistsError(f"{out} is not empty and holds no {what}")
        _remove_dead_builds(out)
        logger.info(f"Building the {what} in {out}")
        tmp = Path(
            tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".building", dir=out.parent)
        )
        try:
            tmp.chmod(0o755)
            write(tmp)
            (tmp / marker).write_text(json.dumps(key, indent=2))
            _publish(tmp, out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    logger.info(f"Built the {what} in {out}")
    return out


def _publish(tmp: Path, out: Path) -> None:
    """Put the finished ``tmp`` at ``out``, replacing what was there."""
    if not out.exists():
        tmp.rename(out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
    old.rmdir()
    out.rename(old)
    tmp.rename(out)
    shutil.rmtree(old, ignore_errors=True)


def _remove_dead_builds(out: Path) -> None:
    """Remove what killed builders of ``out`` left (called under the lock)."""
    for pattern in (f".{out.name}.*.building", f".{out.name}.*.old"):
        for leftover in out.parent.glob(pattern):
            logger.info(f"Removing {leftover}, left by an interrupted build")
            shutil.rmtree(leftover, ignore_errors=True)

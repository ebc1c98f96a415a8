"""Writing files so that a crash never leaves a half-written one behind."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def atomic_write(dest: str | os.PathLike, write: Callable[[Path], None]) -> None:
    """Run ``write(tmp)`` on a temporary file beside ``dest``, then rename it over.

    If ``write`` raises, the temporary file is removed and an existing ``dest``
    is left untouched. The file is fsync'ed before the rename.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

"""Build-once folders: a build is reused while its marker matches its key.

Files are written to a temporary sibling folder and moved in, marker last, so a
concurrent reader never sees a half-written build as complete.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from areal.utils import logging

logger = logging.getLogger("StandinBuild")

MARKER_FILE = "standin_build.json"
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")


def is_complete(out: Path, key: dict) -> bool:
    """Whether ``out`` holds a finished build made from ``key``."""
    marker = out / MARKER_FILE
    if not marker.is_file() or not all((out / f).is_file() for f in REQUIRED_FILES):
        return False
    try:
        return json.loads(marker.read_text()) == key
    except (OSError, ValueError):
        return False


def cached_build(
    out_dir: str | Path,
    key: dict,
    write: Callable[[Path], None],
    overwrite: bool = False,
) -> Path:
    """``write`` a build into ``out_dir`` unless a build of the same ``key`` is there.

    A non-empty folder that holds no build is refused (unless ``overwrite``).
    """
    out = Path(out_dir)
    if not overwrite and is_complete(out, key):
        logger.info(f"Reusing the build in {out}")
        return out
    if out.exists() and any(out.iterdir()) and not (out / MARKER_FILE).exists():
        if not overwrite:
            raise FileExistsError(f"{out} is not empty and holds no stand-in build")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    tmp.chmod(0o755)
    try:
        write(tmp)
        (tmp / MARKER_FILE).write_text(json.dumps(key, indent=2))
        if not out.exists():
            try:
                tmp.rename(out)
            except OSError:  # another process published first
                if not is_complete(out, key):
                    raise
        else:
            (out / MARKER_FILE).unlink(missing_ok=True)
            for f in sorted(tmp.iterdir()):
                if f.name != MARKER_FILE:
                    os.replace(f, out / f.name)
            os.replace(tmp / MARKER_FILE, out / MARKER_FILE)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    logger.info(f"Built {out}")
    return out

"""The stand-in's model folders, built once and reused while their key matches.

A thin layer over :func:`memagent_workflow.data.build_once.build_once` (safe
when several processes build the same folder at once), with the marker name
and the files every model folder must hold.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from memagent_workflow.data.build_once import build_once, is_built

MARKER_FILE = "standin_build.json"
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")


def is_complete(out: Path, key: dict) -> bool:
    """Whether ``out`` holds a finished build made from ``key``."""
    return is_built(out, key, MARKER_FILE, REQUIRED_FILES)


def cached_build(
    out_dir: str | Path,
    key: dict,
    write: Callable[[Path], None],
    overwrite: bool = False,
) -> Path:
    """``write`` a build into ``out_dir`` unless a build of the same ``key`` is there.

    A non-empty folder that holds no build is refused (unless ``overwrite``).
    """
    return build_once(
        out_dir,
        key,
        write,
        marker=MARKER_FILE,
        required=REQUIRED_FILES,
        overwrite=overwrite,
        what="stand-in model",
    )

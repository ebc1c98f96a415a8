"""The stand-in's model folders, built once and reused while their key matches.

A thin layer over :func:`memagent_workflow.data.build_once.build_once` (safe
when several processes build the same folder at once), with the marker name
and the files every model folder must hold. The terminal says which: a build
(``build_once``'s lines, and the warm start's bar), a wait for another
process's build (``build_once``'s), or the cached model reused (here).
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable, Iterable
from pathlib import Path

from areal.utils import logging

from memagent_workflow.data.build_once import build_once, is_built

shown = logging.getLogger("StandinBuild")  # on the terminal too (infra.terminal)

MARKER_FILE = "standin_build.json"
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")


def source_digest(modules: Iterable[str]) -> str:
    """A digest of the named modules' source files: a build keyed by it is
    rebuilt whenever the code that writes it changes, with no version to bump."""
    digest = hashlib.sha256()
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise ValueError(f"source_digest: no source for module {name}")
        digest.update(name.encode() + b"\0" + Path(spec.origin).read_bytes())
    return digest.hexdigest()[:16]


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
    if not overwrite and is_complete(Path(out_dir), key):
        shown.info(f"using the cached stand-in model at {out_dir}")
        return Path(out_dir)
    return build_once(
        out_dir,
        key,
        write,
        marker=MARKER_FILE,
        required=REQUIRED_FILES,
        overwrite=overwrite,
        what="stand-in model",
    )

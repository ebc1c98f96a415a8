"""The original MemAgent's source files at a pinned commit, as bytes.

Each file of github.com/BytedTsinghua-SIA/MemAgent is read from a folder the
user gives (``:DIR``), else the cache (``$XDG_CACHE_HOME/memagent``, else
``~/.cache/memagent``), else downloaded once from raw.githubusercontent.com and
cached; every copy is checked against its pinned sha256. What is read out of
the files is ``original.py``'s.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from urllib.request import urlopen

from areal.utils import logging

logger = logging.getLogger("MemAgentPrompts")

REPO = "BytedTsinghua-SIA/MemAgent"
COMMIT = "76b7a658988e4ea53d7388a62de6c0ce79084146"  # main, 2025-06-27
RAW_URL = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"
DOWNLOAD_TIMEOUT_S = 30.0

TRAIN_FILE = "recurrent/impls/memory.py"
EVAL_BOXED_FILE = "taskutils/memory_eval/utils/recurrent_boxed.py"
EVAL_ANSWER_IS_FILE = "taskutils/memory_eval/utils/recurrent.py"

#: sha256 of each file at each pinned commit.
SHA256 = {
    COMMIT: {
        TRAIN_FILE: "d12a704ca04e7b7b9df10e0740c63d7d247aa76b7fd90d12f15315966771bd23",
        EVAL_BOXED_FILE: "18685b1a3c2422a27581d802ceed2559e181fb97ab858fa7fc8811b7cd5a69cb",
        EVAL_ANSWER_IS_FILE: "1e0082a7a85a97663eb5e747ae7d925c153acab8f403c026b15debd1a1b97e41",
    }
}

KEY = "original"


class OriginalPromptsError(ValueError):
    """The original's templates could not be had: the message says how to give them."""


def cache_dir() -> Path:
    """Where downloads are kept: ``$XDG_CACHE_HOME/memagent`` or ``~/.cache/memagent``."""
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "memagent"


def source_url(path: str, commit: str = COMMIT) -> str:
    """The raw.githubusercontent.com address of ``path`` at ``commit``."""
    return RAW_URL.format(repo=REPO, commit=commit, path=path)


def _checked(data: bytes, path: str, commit: str, where: str, hint: str = "") -> bytes:
    """``data`` if its sha256 is the pinned one (unpinned commits: a warning)."""
    digest = hashlib.sha256(data).hexdigest()
    want = SHA256.get(commit, {}).get(path)
    if want is None:
        logger.warning(
            f"{KEY}@{commit}: no pinned checksum for {path}; using {where} "
            f"unchecked (sha256 {digest})"
        )
    elif digest != want:
        raise OriginalPromptsError(
            f"{where}: sha256 {digest}, not the pinned {want} of {REPO}@{commit}:"
            f"{path}; " + (hint or f"fetch {source_url(path, commit)} again")
        )
    return data


def _how_to_give(path: str, commit: str, cached: Path, key: str) -> str:
    return (
        f"fetch {source_url(path, commit)} and save it as {cached} (then rerun), "
        f"or put it in a folder DIR as DIR/{path} or DIR/{Path(path).name} and "
        f"pass memagent.prompts={key}:DIR (docs/prompts.md)"
    )


def source_bytes(
    path: str, commit: str = COMMIT, directory: str | None = None, key: str = KEY
) -> bytes:
    """The original's ``path`` at ``commit``: from ``directory``, else the cache,
    else downloaded (then cached); checked against the pin each time."""
    if directory is not None:
        for name in (path, Path(path).name):
            given = Path(directory).expanduser() / name
            if given.is_file():
                return _checked(given.read_bytes(), path, commit, str(given))
        raise OriginalPromptsError(
            f"memagent.prompts=...:{directory}: holds neither {path} nor "
            f"{Path(path).name}; fetch it from {source_url(path, commit)}"
        )
    cached = cache_dir() / KEY / commit / path
    if cached.is_file():
        try:
            return _checked(cached.read_bytes(), path, commit, str(cached))
        except OriginalPromptsError as exc:
            logger.warning(f"{exc}; downloading it again")
    url, hint = source_url(path, commit), _how_to_give(path, commit, cached, key)
    try:
        with urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response:
            data = response.read()
    except (OSError, ValueError) as exc:  # URLError and HTTPError are OSErrors
        raise OriginalPromptsError(f"cannot download {url} ({exc}); {hint}") from None
    _checked(data, path, commit, f"the download of {url}", f"give the file: {hint}")
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f"{cached.name}.{os.getpid()}.part")
        tmp.write_bytes(data)
        os.replace(tmp, cached)
        logger.info(f"downloaded {url} to {cached}")
    except OSError as exc:
        logger.warning(f"downloaded {url}, but cannot cache it at {cached}: {exc}")
    return data

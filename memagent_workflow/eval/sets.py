"""RULER-HQA evaluation sets: load, check, download and build ``eval_{N}.json``.

Each file is a JSON list of samples. Hub files use the original field names
(``input``, ``context``, ``answers``, ``num_docs``, ``index``); ours use
``{id, question, context, answers, num_docs}``. N is the number of documents
(HotpotQA paragraphs) in each sample's context. No AReaL import here.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from memagent_workflow.data import hub
from memagent_workflow.data.files import DataError, read_records
from memagent_workflow.data.schema import BadField, check_rows, show

DEFAULT_LENGTHS = (50, 100, 200, 400, 800, 1600, 3200, 6400)
HUB_REPO_ID = "BytedTsinghua-SIA/hotpotqa"
_DOC_HEADER = re.compile(r"^Document \d+:$", re.MULTILINE)


class EvalDataError(DataError):
    """A missing, malformed or unobtainable evaluation or source file."""


def eval_file(data_root: str | os.PathLike, n: int) -> Path:
    """Path of the RULER-HQA file with ``n`` documents per sample."""
    return Path(data_root) / f"eval_{n}.json"


# ---------------------------------------------------------------- loading


def _num_docs(raw: dict, row: dict) -> None:
    """Add ``num_docs``: the file's own count, else the ``Document k:`` headers."""
    num_docs = raw.get("num_docs")
    if num_docs is None:
        num_docs = len(_DOC_HEADER.findall(row["context"]))
    elif isinstance(num_docs, bool) or not isinstance(num_docs, int) or num_docs < 0:
        raise BadField("num_docs", f"expected an int >= 0, got {show(num_docs)}")
    row["num_docs"] = num_docs


def iter_eval_file(path: str | os.PathLike) -> Iterator[dict]:
    """Validated samples ``{id, question, context, answers, num_docs}``, streamed.

    Every bad sample is reported in one :class:`EvalDataError` after the last.
    """
    try:
        yield from check_rows(read_records(path), str(path), extra=_num_docs)
    except DataError as exc:
        raise EvalDataError(str(exc)) from None


def load_eval_file(path: str | os.PathLike) -> list[dict]:
    """All samples of an eval file as ``{id, question, context, answers, num_docs}``."""
    return list(iter_eval_file(path))


def count_eval_samples(path: str | os.PathLike) -> int:
    """Validate a file without keeping its samples; return how many it holds."""
    return sum(1 for _ in iter_eval_file(path))


# ------------------------------------------------------- status / download


def status(
    data_root: str | os.PathLike, lengths: Iterable[int] = DEFAULT_LENGTHS
) -> dict[int, Path | None]:
    """For each length, the file's path if present, else None (contents not checked)."""
    return {
        n: (p if (p := eval_file(data_root, n)).is_file() else None) for n in lengths
    }


def format_status(data_root: str | os.PathLike, found: dict[int, Path | None]) -> str:
    """A printable present/missing table for the result of ``status``."""
    lines = [f"RULER-HQA eval files under {data_root}:"]
    for n, p in found.items():
        if p is None:
            lines.append(f"  eval_{n}.json  missing")
        else:
            size = p.stat().st_size / 2**20
            lines.append(f"  eval_{n}.json  present  ({size:.1f} MiB)")
    missing = sum(p is None for p in found.values())
    lines.append(f"{len(found) - missing} present, {missing} missing")
    return "\n".join(lines)


def download(
    data_root: str | os.PathLike,
    lengths: Iterable[int] = DEFAULT_LENGTHS,
    repo_id: str = HUB_REPO_ID,
    force: bool = False,
) -> list[Path]:
    """Fetch missing (or, with ``force``, all) files from the hub; validate each."""
    root = Path(data_root)
    root.mkdir(parents=True, exist_ok=True)
    written = []
    staging = root / ".download"  # hub files are checked here before they count
    try:
        for n in lengths:
            dest = eval_file(root, n)
            if dest.is_file() and not force:
                continue
            try:
                fetched = hub.download_file(repo_id, dest.name, local_dir=staging)
            except hub.HubError as exc:
                raise EvalDataError(str(exc)) from exc
            count_eval_samples(fetched)
            os.replace(fetched, dest)
            written.append(dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written

"""RULER-HQA evaluation sets: load, check, download and build ``eval_{N}.json``.

Each file is a JSON list of samples. Hub files use the original field names
(``input``, ``context``, ``answers``, ``num_docs``, ``index``); ours use
``{id, question, context, answers, num_docs}``. N is the number of documents
(HotpotQA paragraphs) in each sample's context. No AReaL import here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from memagent_workflow.data import hub
from memagent_workflow.data.files import DataError, read_records, write_json
from memagent_workflow.data.schema import BadField, check_rows, show

DEFAULT_LENGTHS = (50, 100, 200, 400, 800, 1600, 3200, 6400)
# The official sets: full text up to 6400 documents (896K tokens), index-only
# (document indices into HotpotQA's dev paragraphs) for 12800 and 25600.
OFFICIAL_LENGTHS = (*DEFAULT_LENGTHS, 12800, 25600)
HUB_REPO_ID = "BytedTsinghua-SIA/hotpotqa"
# The hub revision downloads read by default ("main" until a commit is pinned;
# --revision sets another, and each download records the commit it got).
HUB_REVISION = "main"
# The ``set`` field of samples built here rather than taken from the hub.
BUILT_SET = "RULER-HQA-style"
_DOC_HEADER = re.compile(r"^Document \d+:$", re.MULTILINE)


class EvalDataError(DataError):
    """A missing, malformed or unobtainable evaluation or source file."""


def eval_file(data_root: str | os.PathLike, n: int) -> Path:
    """Path of the RULER-HQA file with ``n`` documents per sample."""
    return Path(data_root) / f"eval_{n}.json"


# ---------------------------------------------------------------- loading


def _num_docs(raw: dict, row: dict) -> None:
    """Add ``num_docs`` (the file's own count, else the ``Document k:`` headers)
    and ``set`` (e.g. ``RULER-HQA-style`` for a built set; None if unmarked)."""
    kind = raw.get("set")
    if kind is not None and not isinstance(kind, str):
        raise BadField("set", f"expected a string, got {show(kind)}")
    row["set"] = kind
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
    from memagent_workflow.eval.expand import is_index_only

    lines = [f"RULER-HQA eval files under {data_root}:"]
    for n, p in found.items():
        if p is None:
            lines.append(f"  eval_{n}.json  missing")
            continue
        size = p.stat().st_size / 2**20
        note = ""
        if is_index_only(p):
            note = (
                "; index-only: expand it with --expand "
                f"{p} --source hotpot_dev_distractor_v1.json --output {p}"
            )
        lines.append(f"  eval_{n}.json  present  ({size:.1f} MiB{note})")
    missing = sum(p is None for p in found.values())
    lines.append(f"{len(found) - missing} present, {missing} missing")
    return "\n".join(lines)


MANIFEST = "hub_download.json"


def download(
    data_root: str | os.PathLike,
    lengths: Iterable[int] = OFFICIAL_LENGTHS,
    repo_id: str = HUB_REPO_ID,
    revision: str = HUB_REVISION,
    force: bool = False,
    source: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Fetch the official files of ``lengths`` that the hub holds, at one commit.

    ``revision`` (branch, tag or commit) is resolved to its commit first and
    every file is read at that commit; ``{data_root}/hub_download.json``
    records it per file. A file is checked before it replaces anything. An
    index-only file (N > 10000) is expanded to text when ``source`` (HotpotQA's
    dev file) is given, else kept as it is. Returns what happened:
    ``commit``, ``written``, ``skipped`` (present), ``not_on_hub`` (lengths),
    ``index_only`` (written as indices).
    """
    from memagent_workflow.eval.expand import check_index_only, expand_file

    root = Path(data_root)
    root.mkdir(parents=True, exist_ok=True)
    try:
        commit = hub.resolve_revision(repo_id, revision)
        names = set(hub.list_files(repo_id, commit))
    except hub.HubError as exc:
        raise EvalDataError(str(exc)) from exc
    report: dict[str, Any] = {
        "repo_id": repo_id,
        "revision": revision,
        "commit": commit,
        "written": [],
        "skipped": [],
        "not_on_hub": [],
        "index_only": [],
    }
    from memagent_workflow.data.build_once import exclusive

    # One download per folder at a time: they share the staging folder and
    # the manifest.
    with exclusive(root / ".download.lock", f"downloading into {root}"):
        manifest_path = root / MANIFEST
        manifest = (
            json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
        )
        staging = root / ".download"  # hub files are checked here before they count
        try:
            for n in lengths:
                dest = eval_file(root, n)
                if dest.name not in names:
                    report["not_on_hub"].append(n)
                    continue
                if dest.is_file() and not force:
                    report["skipped"].append(dest)
                    continue
                try:
                    fetched = hub.download_file(
                        repo_id, dest.name, local_dir=staging, revision=commit
                    )
                except hub.HubError as exc:
                    raise EvalDataError(str(exc)) from exc
                index_only = check_index_only(fetched)  # checks an index-only file
                if not index_only:
                    count_eval_samples(fetched)
                if index_only and source is not None:
                    expand_file(fetched, source, dest)
                else:
                    os.replace(fetched, dest)
                    if index_only:
                        report["index_only"].append(dest)
                report["written"].append(dest)
                manifest[dest.name] = {
                    "repo_id": repo_id,
                    "revision": revision,
                    "commit": commit,
                    "index_only": index_only,
                    "expanded_from": str(source) if index_only and source else None,
                }
                write_json(manifest_path, manifest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return report

"""RULER-HQA evaluation sets from the hub: what is present, and downloads at one commit."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memagent_workflow.data import hub
from memagent_workflow.data.files import write_json
from memagent_workflow.eval.expand import check_index_only, expand_file, is_index_only
from memagent_workflow.eval.sets import (
    DEFAULT_LENGTHS,
    HUB_REPO_ID,
    HUB_REVISION,
    OFFICIAL_LENGTHS,
    EvalDataError,
    count_eval_samples,
    eval_file,
)


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

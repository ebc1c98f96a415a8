"""Hugging Face hub downloads (the project's only network access).

Everything goes through ``huggingface_hub`` (its cache, retries, ``HF_ENDPOINT``,
``HF_TOKEN`` and offline mode); failures become one :class:`HubError` that says
what was asked for and why it failed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from memagent_workflow.data.files import SUPPORTED_SUFFIXES


class HubError(RuntimeError):
    """The hub could not be reached, or did not have the files."""


def _failed(what: str, repo_id: str, exc: Exception) -> HubError:
    return HubError(
        f"could not download {what} of dataset {repo_id!r} from the Hugging Face "
        f"hub ({type(exc).__name__}: {exc}). Check the network, HF_ENDPOINT and "
        "HF_TOKEN, or download the file yourself and pass its path."
    )


def split_files(names: Iterable[str], split: str) -> list[str]:
    """Readable data files (any folder) whose file name holds ``split`` as a word
    (between non-alphanumerics: "dev" matches ``hotpotqa_dev.parquet``, not
    ``device.json``)."""
    word = re.compile(rf"(?<![A-Za-z0-9]){re.escape(split)}(?![A-Za-z0-9])")
    return sorted(
        name
        for name in names
        if word.search(name.rsplit("/", 1)[-1]) and name.endswith(SUPPORTED_SUFFIXES)
    )


def list_files(repo_id: str, revision: str | None = None) -> list[str]:
    """Every file name of dataset ``repo_id`` at ``revision``."""
    from huggingface_hub import HfApi

    try:
        return HfApi().list_repo_files(repo_id, repo_type="dataset", revision=revision)
    except Exception as exc:  # httpx / HfHubHTTPError / offline mode
        raise _failed("the file list", repo_id, exc) from exc


def resolve_revision(repo_id: str, revision: str | None = None) -> str:
    """The commit hash that ``revision`` (a branch, tag or hash) names now."""
    from huggingface_hub import HfApi

    try:
        return HfApi().dataset_info(repo_id, revision=revision).sha
    except Exception as exc:
        raise _failed(f"the revision {revision!r}", repo_id, exc) from exc


def split_file(names: Iterable[str], split: str) -> str:
    """The one data file for ``split``; none or several is an error naming them."""
    names = list(names)
    chosen = split_files(names, split)
    if len(chosen) == 1:
        return chosen[0]
    if not chosen:
        raise HubError(
            f"no .parquet/.jsonl/.json file whose name contains {split!r}; "
            f"files: {', '.join(sorted(names)) or '(none)'}"
        )
    raise HubError(
        f"{len(chosen)} files match the split {split!r}: {', '.join(chosen)}; "
        "pick one with --hf-file NAME"
    )


def download_split(repo_id: str, split: str, revision: str | None = None) -> Path:
    """The one dataset file of ``repo_id`` whose name holds ``split`` (HF cache)."""
    try:
        name = split_file(list_files(repo_id, revision), split)
    except HubError as exc:
        raise HubError(f"dataset {repo_id!r}: {exc}") from None
    return download_file(repo_id, name, revision=revision)


def download_file(
    repo_id: str,
    filename: str,
    local_dir: str | os.PathLike | None = None,
    revision: str | None = None,
) -> Path:
    """One dataset file, into ``local_dir`` (or the HF cache when None)."""
    from huggingface_hub import hf_hub_download

    try:
        return Path(
            hf_hub_download(
                repo_id,
                filename,
                repo_type="dataset",
                revision=revision,
                local_dir=local_dir,
            )
        )
    except Exception as exc:  # httpx / HfHubHTTPError / offline mode / disk errors
        raise _failed(repr(filename), repo_id, exc) from exc

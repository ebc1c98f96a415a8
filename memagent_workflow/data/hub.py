"""Hugging Face hub downloads (the project's only network access).

Everything goes through ``huggingface_hub`` (its cache, retries, ``HF_ENDPOINT``,
``HF_TOKEN`` and offline mode); failures become one :class:`HubError` that says
what was asked for and why it failed.
"""

from __future__ import annotations

import os
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
    """Readable data files (any folder) whose file name contains ``split``."""
    return sorted(
        name
        for name in names
        if split in name.rsplit("/", 1)[-1] and name.endswith(SUPPORTED_SUFFIXES)
    )


def download_split(repo_id: str, split: str, revision: str | None = None) -> list[Path]:
    """The dataset files of ``repo_id`` whose name contains ``split`` (HF cache)."""
    from huggingface_hub import HfApi

    try:
        names = HfApi().list_repo_files(repo_id, repo_type="dataset", revision=revision)
    except Exception as exc:  # httpx / HfHubHTTPError / offline mode
        raise _failed("the file list", repo_id, exc) from exc
    chosen = split_files(names, split)
    if not chosen:
        raise HubError(
            f"dataset {repo_id!r} has no .parquet/.jsonl/.json file whose name "
            f"contains {split!r}; files: {', '.join(sorted(names)) or '(none)'}"
        )
    return [download_file(repo_id, name, revision=revision) for name in chosen]


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

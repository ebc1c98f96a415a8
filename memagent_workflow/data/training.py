"""Loading, validating and writing MemAgent QA data.

Every dataset the project trains or evaluates on is reduced to one JSONL row shape::

    {"id": str, "question": str, "context": str, "answers": [str, ...]}

Accepted input rows (parquet, JSONL, or a JSON list):

* the MemAgent HotpotQA parquet rows (``prompt[0].content``, ``context``,
  ``reward_model.ground_truth``, ``extra_info.index``);
* the RULER-HQA eval rows (``input``, ``context``, ``answers``, ``index``);
* rows already in the shape above.

Bad rows raise :class:`DataError`, whose message names the file, the row and
the field. This module imports only the standard library at import time (pyarrow
and huggingface_hub are imported where they are used), so scripts stay fast.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from memagent_workflow.data.files import atomic_write

#: File extensions understood by :func:`load_rows`.
SUPPORTED_SUFFIXES = (".parquet", ".jsonl", ".json")


class DataError(ValueError):
    """A data file or row that cannot be used; the message says where and why."""


class HubError(RuntimeError):
    """The Hugging Face hub could not be reached or did not have the files."""


# --------------------------------------------------------------------------- loading


def load_rows(path: str | os.PathLike) -> Iterator[tuple[str, dict]]:
    """Yield ``(row_label, row)`` for every row of a parquet, JSONL or JSON file.

    Labels say how rows are counted: ``"line 17"`` (1-based line of a JSONL
    file), ``"row 16 (0-based)"`` (parquet row index) or ``"item 16 (0-based)"``
    (position in a JSON list). Rows are read lazily, so large files stream.
    """
    path = Path(path)
    if path.suffix not in SUPPORTED_SUFFIXES:
        raise DataError(
            f"{path}: unsupported file type {path.suffix!r}; "
            f"expected one of {', '.join(SUPPORTED_SUFFIXES)}"
        )
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    if path.suffix == ".parquet":
        yield from _load_parquet(path)
    elif path.suffix == ".json" and _starts_with_bracket(path):
        yield from _load_json_list(path)
    else:
        yield from _load_jsonl(path)


def _starts_with_bracket(path: Path) -> bool:
    with path.open(encoding="utf-8") as f:
        while chunk := f.read(4096):
            stripped = chunk.lstrip()
            if stripped:
                return stripped.startswith("[")
    return False


def _load_parquet(path: Path) -> Iterator[tuple[str, dict]]:
    import pyarrow.parquet as pq

    try:
        batches = pq.ParquetFile(path).iter_batches(batch_size=64)
        index = 0
        for batch in batches:
            for row in batch.to_pylist():
                yield f"row {index} (0-based)", row
                index += 1
    except (OSError, ValueError) as exc:  # pyarrow raises ArrowInvalid(ValueError)
        raise DataError(f"{path}: cannot read parquet: {exc}") from exc


def _load_jsonl(path: Path) -> Iterator[tuple[str, dict]]:
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            label = f"line {lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}: {label}: invalid JSON: {exc}") from exc
            if not isinstance(row, dict):
                raise DataError(
                    f"{path}: {label}: expected a JSON object, got {type(row).__name__}"
                )
            yield label, row


def _load_json_list(path: Path) -> Iterator[tuple[str, dict]]:
    with path.open(encoding="utf-8") as f:
        try:
            rows = json.load(f)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: invalid JSON: {exc}") from exc
    for index, row in enumerate(rows):
        label = f"item {index} (0-based)"
        if not isinstance(row, dict):
            raise DataError(
                f"{path}: {label}: expected a JSON object, got {type(row).__name__}"
            )
        yield label, row


# ------------------------------------------------------------------------ conversion


def _lookup(row: dict, dotted: str) -> Any:
    """``row["a"]["b"]`` for ``"a.b"``; None when any level is absent."""
    value: Any = row
    for key in dotted.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _first_present(row: dict, fields: tuple[str, ...]) -> tuple[str | None, Any]:
    """The first of ``fields`` that is present and not None, with its value."""
    for field in fields:
        value = _lookup(row, field)
        if value is not None:
            return field, value
    return None, None


class _BadField(Exception):
    """One row's problem; :func:`iter_converted` adds the file and row."""

    def __init__(self, fields: tuple[str, ...], problem: str):
        super().__init__(problem)
        self.fields, self.problem = fields, problem


def _question(row: dict) -> str:
    field, value = _first_present(row, ("question", "input"))
    if field is None:
        field, prompt = "prompt[0].content", row.get("prompt")
        if prompt is None:
            raise _BadField(("question", "input", "prompt[0].content"), "missing")
        if (
            not isinstance(prompt, list)
            or not prompt
            or not isinstance(prompt[0], dict)
        ):
            raise _BadField(
                ("prompt",), f"expected a list of messages, got {_show(prompt)}"
            )
        value = prompt[0].get("content")
    if not isinstance(value, str):
        raise _BadField((field,), f"expected a string, got {_show(value)}")
    if not value.strip():
        raise _BadField((field,), f"empty question: {value!r}")
    return value


def _context(row: dict) -> str:
    value = row.get("context")
    if value is None:
        raise _BadField(("context",), "missing")
    if not isinstance(value, str):
        hint = (
            " (index-only eval rows need their text rebuilt)"
            if isinstance(value, list)
            else ""
        )
        raise _BadField(("context",), f"expected a string, got {_show(value)}{hint}")
    if not value.strip():
        raise _BadField(("context",), f"expected a non-empty string, got {value!r}")
    return value


def _answers(row: dict) -> list[str]:
    field, value = _first_present(row, ("answers", "reward_model.ground_truth"))
    if field is None:
        raise _BadField(("answers", "reward_model.ground_truth"), "missing")
    if isinstance(value, str):
        value = [value]
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(a, str) and a.strip() for a in value)
    ):
        raise _BadField(
            (field,),
            f"expected a non-empty list of non-empty strings, got {_show(value)}",
        )
    return list(value)


def _row_id(row: dict, position: int) -> tuple[str, str]:
    """Return ``(id, field it came from)``; falls back to the row's position."""
    field, value = _first_present(row, ("id", "_id", "extra_info.index", "index"))
    if field is None:
        return str(position), "row number"
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise _BadField(
            (field,), f"expected a non-empty string or an integer, got {_show(value)}"
        )
    return str(value), field


def _show(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def iter_converted(
    rows: Iterable[dict | tuple[str, dict]],
    source: str,
    seen: dict[str, str] | None = None,
) -> Iterator[dict]:
    """Validate and convert rows lazily; see :func:`convert_rows`.

    ``seen`` maps ids to where they were first used; pass the same dict to
    several calls to reject duplicate ids across files.
    """
    seen = {} if seen is None else seen
    for position, item in enumerate(rows):
        label, row = (
            item if isinstance(item, tuple) else (f"row {position} (0-based)", item)
        )
        where = f"{source}: {label}"
        if not isinstance(row, dict):
            raise DataError(f"{where}: expected a mapping, got {type(row).__name__}")
        try:
            question, context, answers = _question(row), _context(row), _answers(row)
            row_id, id_field = _row_id(row, position)
            if row_id in seen:
                raise _BadField(
                    (id_field,),
                    f"duplicate id {row_id!r} (first used at {seen[row_id]})",
                )
        except _BadField as bad:
            fields = " or ".join(repr(f) for f in bad.fields)
            raise DataError(f"{where}: field {fields}: {bad.problem}") from None
        seen[row_id] = where
        yield {
            "id": row_id,
            "question": question,
            "context": context,
            "answers": answers,
        }


def convert_rows(rows: Iterable[dict | tuple[str, dict]], source: str) -> list[dict]:
    """Convert rows to ``{"id", "question", "context", "answers"}`` dicts.

    ``rows`` holds plain dicts (labelled by 0-based position) or the
    ``(label, row)`` pairs :func:`load_rows` yields. ``source`` names the
    data in error messages (normally the file path). Raises :class:`DataError`
    on the first bad row, and on duplicate ids.
    """
    return list(iter_converted(rows, source))


def convert_file(path: str | os.PathLike, limit: int | None = None) -> list[dict]:
    """Load, validate and convert the first ``limit`` rows (all when None) of a file."""
    return list(iter_converted(itertools.islice(load_rows(path), limit), str(path)))


# --------------------------------------------------------------------------- writing


def write_jsonl_atomic(rows: Iterable[dict], path: str | os.PathLike) -> int:
    """Write rows as JSONL, replacing ``path`` only if every row was written.

    Rows go to a temporary file next to ``path`` that is renamed over it at
    the end (``os.replace``). If ``rows`` raises (e.g. a lazy conversion hits a
    bad row), the temporary file is removed and an existing ``path`` is left
    untouched. Returns the number of rows written.
    """
    count = 0

    def write(tmp: Path) -> None:
        nonlocal count
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
                count += 1

    atomic_write(path, write)
    return count


# ------------------------------------------------------------------------ HF hub


def select_hub_files(names: Iterable[str], split: str) -> list[str]:
    """Hub files (any folder) whose file name contains ``split`` and that we can read."""
    return sorted(
        name
        for name in names
        if split in name.rsplit("/", 1)[-1] and name.endswith(SUPPORTED_SUFFIXES)
    )


def fetch_hub_files(repo_id: str, split: str) -> list[Path]:
    """Download the dataset files of ``repo_id`` whose name contains ``split``.

    All hub traffic of this module is here (tests replace this function).
    Raises :class:`HubError` with the cause when the hub cannot be used.
    """
    from huggingface_hub import HfApi, hf_hub_download

    try:
        names = HfApi().list_repo_files(repo_id, repo_type="dataset")
        chosen = select_hub_files(names, split)
        if not chosen:
            raise HubError(
                f"dataset {repo_id!r} has no .parquet/.jsonl/.json file whose name "
                f"contains {split!r}; files: {', '.join(sorted(names)) or '(none)'}"
            )
        return [
            Path(hf_hub_download(repo_id, name, repo_type="dataset")) for name in chosen
        ]
    except HubError:
        raise
    except Exception as exc:  # httpx / HfHubHTTPError / offline mode / disk errors
        raise HubError(
            f"could not download {split!r} files of dataset {repo_id!r} from the "
            f"Hugging Face hub ({type(exc).__name__}: {exc}). Check the network, "
            "HF_ENDPOINT and HF_TOKEN, or download the file yourself and use --input."
        ) from exc


__all__ = [
    "DataError",
    "HubError",
    "convert_file",
    "convert_rows",
    "fetch_hub_files",
    "iter_converted",
    "load_rows",
    "select_hub_files",
    "write_jsonl_atomic",
]

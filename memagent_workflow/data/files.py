"""Data files: records read lazily with their positions, and atomic writes.

Readers yield ``(label, record)`` pairs, where the label says how a reader of the
file would find the record: ``"line 17"`` (JSONL, 1-based), ``"item 16 (0-based)"``
(a JSON list) or ``"row 16 (0-based)"`` (parquet). A record that cannot be parsed
comes through as an :class:`Unreadable`, so that a validator can report it with
every other bad record instead of stopping at the first. (``datasets.load_dataset``
would coerce rows to one Arrow schema and lose the positions these messages need.)

Writers never leave a half-written file: they write a temporary file beside the
destination, fsync it and rename it over.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: File types the readers understand.
SUPPORTED_SUFFIXES = (".parquet", ".jsonl", ".json")


class DataError(ValueError):
    """Bad data: a file that cannot be read, or bad rows (file, row, field, why)."""


@dataclass(frozen=True)
class Unreadable:
    """A record that could not be parsed (e.g. one invalid JSONL line)."""

    problem: str


# ---------------------------------------------------------------------- reading


def read_records(path: str | os.PathLike) -> Iterator[tuple[str, Any]]:
    """``(label, record)`` for every record of a parquet, JSONL or JSON-list file.

    A ``.json`` file is a JSON list when its first non-blank character is ``[``,
    else JSONL. Records stream: a list written one record per line (as this
    project writes them) is read line by line.
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
        yield from _parquet(path)
    elif path.suffix == ".json" and _is_json_list(path):
        yield from _json_list(path)
    else:
        yield from _jsonl(path)


def _is_json_list(path: Path) -> bool:
    with path.open(encoding="utf-8", errors="replace") as f:
        while chunk := f.read(4096):
            if stripped := chunk.lstrip():
                return stripped.startswith("[")
    return False


def _parquet(path: Path) -> Iterator[tuple[str, Any]]:
    import pyarrow.parquet as pq

    try:
        index = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=64):
            for row in batch.to_pylist():
                yield f"row {index} (0-based)", row
                index += 1
    except (OSError, ValueError) as exc:  # pyarrow raises ArrowInvalid(ValueError)
        raise DataError(f"{path}: cannot read parquet: {exc}") from exc


def _jsonl(path: Path) -> Iterator[tuple[str, Any]]:
    with path.open(encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                yield f"line {lineno}", json.loads(line)
            except json.JSONDecodeError as exc:
                yield f"line {lineno}", Unreadable(f"invalid JSON: {exc}")


def _json_list(path: Path) -> Iterator[tuple[str, Any]]:
    """Stream a one-record-per-line list; anything else is parsed whole."""
    yielded = 0
    try:
        with path.open(encoding="utf-8", newline="") as f:
            if f.readline().strip() == "[":
                for line in f:
                    if (line := line.strip()) == "]":
                        if not f.read().strip():
                            return
                        break  # trailing data: let json.load report it
                    record = json.loads(line.removesuffix(","))
                    yield f"item {yielded} (0-based)", record
                    yielded += 1
    except (json.JSONDecodeError, UnicodeDecodeError):
        pass  # not one record per line: parse the whole file below
    try:
        with path.open(encoding="utf-8") as f:
            records = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(records, list):
        raise DataError(
            f"{path}: top level must be a JSON list, got {type(records).__name__}"
        )
    for index in range(yielded, len(records)):
        yield f"item {index} (0-based)", records[index]


# ---------------------------------------------------------------------- writing


def atomic_write(dest: str | os.PathLike, write: Callable[[Path], None]) -> None:
    """Run ``write(tmp)`` on a temporary file beside ``dest``, then rename it over.

    If ``write`` raises, the temporary file is removed and an existing ``dest``
    is left untouched. The file is fsync'ed before the rename.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_jsonl(path: str | os.PathLike, rows: Iterable[dict]) -> int:
    """Write rows as JSONL atomically; if ``rows`` raises, nothing is written.

    Returns the number of rows written.
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


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write one JSON document (indented) atomically."""
    text = json.dumps(obj, indent=2, ensure_ascii=False) + "\n"
    atomic_write(path, lambda tmp: tmp.write_text(text, "utf-8"))


def write_json_list(path: str | os.PathLike, rows: Iterable[dict]) -> int:
    """Write rows as a JSON list, one row per line, atomically (streamed: a row
    is serialised, written and dropped). If ``rows`` raises, nothing is written.
    ``read_records`` streams this layout back. Returns the number of rows."""
    count = 0

    def write(tmp: Path) -> None:
        nonlocal count
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write("[")
            for row in rows:
                f.write(
                    ("\n" if count == 0 else ",\n")
                    + json.dumps(row, ensure_ascii=False)
                )
                count += 1
            f.write("\n]\n")

    atomic_write(path, write)
    return count

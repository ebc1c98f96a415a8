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

import codecs
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: File types the readers understand.
SUPPORTED_SUFFIXES = (".parquet", ".jsonl", ".json")


class DataError(ValueError):
    """Bad data: a file that cannot be read (or written), or bad rows (file, row,
    field, why)."""


@dataclass(frozen=True)
class Unreadable:
    """A record that could not be parsed (e.g. one invalid JSONL line)."""

    problem: str


# ---------------------------------------------------------------------- reading


def read_records(path: str | os.PathLike) -> Iterator[tuple[str, Any]]:
    """``(label, record)`` for every record of a parquet, JSONL or JSON-list file.

    A ``.json`` file is a JSON list when its first non-blank character is ``[``,
    else JSONL. Records stream: a list written one record per line (as this
    project writes them) is read line by line. A line that is not UTF-8 or not
    JSON is an :class:`Unreadable` record; a file that cannot be read at all is
    a :class:`DataError`.
    """
    path = Path(path)
    if path.suffix not in SUPPORTED_SUFFIXES:
        raise DataError(
            f"{path}: unsupported file type {path.suffix!r}; "
            f"expected one of {', '.join(SUPPORTED_SUFFIXES)}"
        )
    if path.is_dir():
        raise DataError(f"{path}: is a directory, not a data file")
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    try:
        if path.suffix == ".parquet":
            yield from _parquet(path)
        elif path.suffix == ".json" and _is_json_list(path):
            yield from _json_list(path)
        else:
            yield from _jsonl(path)
    except OSError as exc:  # permissions, a file gone or cut while read
        raise DataError(f"{path}: cannot read: {exc}") from None


# Undecodable bytes read with errors="surrogateescape" become U+DC80..U+DCFF,
# which no valid UTF-8 decodes to: a line holds one exactly when it is not UTF-8.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def not_utf8(text: str) -> str | None:
    """Where ``text`` (read with ``errors="surrogateescape"``) is not UTF-8: the
    first bad byte and its column (1-based), or None when it all decoded."""
    if (bad := _ESCAPED_BYTE.search(text)) is None:
        return None
    byte = ord(bad.group()) - 0xDC00
    return f"not UTF-8 text: byte 0x{byte:02x} at column {bad.start() + 1}"


def utf8_problem(text: str) -> str | None:
    """``line L: ...`` where ``text`` (read with ``errors="surrogateescape"``) is
    first not UTF-8, or None."""
    if _ESCAPED_BYTE.search(text) is None:
        return None
    for lineno, line in enumerate(text.split("\n"), start=1):
        if (problem := not_utf8(line)) is not None:
            return f"line {lineno}: {problem}"
    return None


def utf8_error_at(path: str | os.PathLike) -> str | None:
    """Where a file is first not UTF-8 (``line L, byte B of the file``), read in
    1 MiB pieces; None when it all decodes."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    lines, offset = 1, 0  # before the piece being decoded
    with open(path, "rb") as f:
        while True:
            piece = f.read(1 << 20)
            try:
                decoder.decode(piece, final=not piece)
            except UnicodeDecodeError as exc:
                held = len(exc.object) - len(piece)  # a partial character
                line = lines + exc.object.count(b"\n", 0, exc.start)
                byte = exc.object[exc.start : exc.start + 1].hex()
                at = offset - held + exc.start
                return f"line {line}, byte {at} of the file (0x{byte})"
            if not piece:
                return None
            lines += piece.count(b"\n")
            offset += len(piece)


def _load(text: str) -> Any:
    """One JSON value, or :class:`Unreadable` for text that is not UTF-8, nested
    too deeply or holds an int past Python's 4300 digits; text that is not JSON
    raises ``json.JSONDecodeError``."""
    if (problem := not_utf8(text)) is not None:
        return Unreadable(problem)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # the int-length limit
        return Unreadable(f"invalid JSON: {exc}")
    except RecursionError:
        return Unreadable("invalid JSON: nested too deeply")


def _parse(text: str) -> Any:
    """One JSON value, or :class:`Unreadable` saying why not."""
    try:
        return _load(text)
    except json.JSONDecodeError as exc:
        return Unreadable(f"invalid JSON: {exc}")


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
    with path.open(encoding="utf-8", errors="surrogateescape") as f:
        for lineno, line in enumerate(f, start=1):
            if line.strip():
                yield f"line {lineno}", _parse(line)


def _json_list(path: Path) -> Iterator[tuple[str, Any]]:
    """Stream a one-record-per-line list; anything else is parsed whole."""
    yielded = 0
    with path.open(encoding="utf-8", errors="surrogateescape", newline="") as f:
        if f.readline().strip() == "[":
            for line in f:
                if (line := line.strip()) == "]":
                    if not f.read().strip():
                        return
                    break  # trailing data: let the whole parse report it
                try:
                    record = _load(line.removesuffix(","))
                except json.JSONDecodeError:
                    break  # not one record per line: parse the whole file below
                yield f"item {yielded} (0-based)", record
                yielded += 1
    with path.open(encoding="utf-8", errors="surrogateescape") as f:
        text = f.read()
    if (problem := utf8_problem(text)) is not None:
        raise DataError(f"{path}: {problem}")
    records = _parse(text)
    if isinstance(records, Unreadable):
        raise DataError(f"{path}: {records.problem}")
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
    is left untouched. The file is fsync'ed before the rename. A ``dest`` that
    is a directory is a :class:`DataError`, before anything is written.
    """
    dest = Path(dest)
    if dest.is_dir():
        raise DataError(f"{dest}: is a directory; name a file to write")
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file where a folder should be, permissions
        raise DataError(f"{dest}: cannot make its folder: {exc}") from None
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

"""The official RULER-HQA construction: the paragraph pool and index-only files.

The official sets draw their documents from one pool: the sorted set of unique
paragraphs of HotpotQA's ``hotpot_dev_distractor_v1.json``, each written as
``title + "\\n" + "".join(sentences)``. A document index is a position in that
sorted list. For N > 10000 documents the hub files store each sample's
``context`` as its list of document indices ("index-only"); its text is

    "\\n\\n".join(f"Document {k + 1}:\\n{pool[j]}" for k, j in enumerate(indices))

stripped. ``expand_file`` writes that text in place of the indices, keeping
every other field, so that the file reads like any other eval set.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from memagent_workflow.data.files import (
    DataError,
    Unreadable,
    read_records,
    write_json_list,
)
from memagent_workflow.data.schema import (
    BadField,
    bad_rows_message,
    check_unicode,
    parse_id,
    parse_row,
    show,
)
from memagent_workflow.eval.ruler.haystack import supporting_sentences
from memagent_workflow.eval.sets import EvalDataError

_PROBE_BYTES = 1 << 20


def load_hotpotqa_source(path: str | os.PathLike) -> list[dict]:
    """Validated HotpotQA distractor records: ``{_id, question, answer,
    paragraphs, supporting}``.

    ``paragraphs`` is a list of ``(title, text)``; text joins the sentences with ""
    (HotpotQA sentences carry their own leading spaces). ``supporting``: the
    sentences the record's ``supporting_facts`` name ([] if none). The first bad
    record (its item, ``_id`` and field), a duplicate ``_id`` or an empty file is
    an ``EvalDataError``.
    """
    path = Path(path)
    out = []
    seen: dict[str, str] = {}
    try:
        records = list(read_records(path))
    except DataError as exc:
        raise EvalDataError(str(exc)) from None
    for label, rec in records:
        where = f"{path}: {label}"
        if isinstance(rec, Unreadable):
            raise EvalDataError(f"{where}: field '(row)': {rec.problem}")
        if not isinstance(rec, dict):
            raise EvalDataError(
                f"{where}: field '(row)': expected a JSON object, got {show(rec)}"
            )
        try:
            rid = parse_id(rec)
        except BadField as bad:
            raise EvalDataError(f"{where}: {bad}") from None
        where += f" (_id {rid!r})"
        if rid in seen:
            raise EvalDataError(
                f"{where}: field '_id': duplicate {rid!r} (first at {seen[rid]})"
            )
        seen[rid] = f"{path}: {label}"
        for field in ("question", "answer"):
            value = rec.get(field)
            if not isinstance(value, str) or not value.strip():
                raise EvalDataError(
                    f"{where}: field '{field}' must be a non-empty string, "
                    f"got {show(value)}"
                )
        ctx = rec.get("context")
        if not isinstance(ctx, list) or not ctx:
            raise EvalDataError(f"{where}: field 'context' must be a non-empty list")
        paragraphs = []
        for j, para in enumerate(ctx):
            ok = (
                isinstance(para, list | tuple)
                and len(para) == 2
                and isinstance(para[0], str)
                and isinstance(para[1], list)
                and all(isinstance(s, str) for s in para[1])
            )
            if not ok:
                raise EvalDataError(
                    f"{where}: field 'context[{j}]' must be [title, [sentences...]]"
                )
            paragraphs.append((para[0], "".join(para[1])))
        try:  # a lone surrogate cannot be written out
            for name, text in [
                ("question", rec["question"]),
                ("answer", rec["answer"]),
            ]:
                check_unicode(name, text)
            for j, (title, text) in enumerate(paragraphs):
                check_unicode(f"context[{j}]", title + text)
        except BadField as bad:
            raise EvalDataError(f"{where}: {bad}") from None
        q, a = rec["question"], rec["answer"]
        support = supporting_sentences(rec)
        out.append(
            {
                "_id": rid,
                "question": q,
                "answer": a,
                "paragraphs": paragraphs,
                "supporting": support,
            }
        )
    if not out:
        raise EvalDataError(f"{path}: no records (an empty file)")
    return out


def paragraph_pool(records: Sequence[dict]) -> list[str]:
    """The sorted unique ``title\\ntext`` paragraphs of HotpotQA source records.

    ``records`` as ``build.load_hotpotqa_source`` returns them (``paragraphs``:
    ``(title, "".join(sentences))`` pairs).
    """
    return sorted({f"{t}\n{text}" for rec in records for t, text in rec["paragraphs"]})


def _check_indices(indices: Any, size: int | None = None) -> None:
    """``BadField`` unless ``indices`` is a non-empty list of ints in ``[0, size)``."""
    if not isinstance(indices, list) or not indices:
        raise BadField(
            "context", f"expected a non-empty list of ints, got {show(indices)}"
        )
    for k, j in enumerate(indices):
        if isinstance(j, bool) or not isinstance(j, int) or j < 0:
            raise BadField(f"context[{k}]", f"{show(j)} is not a document index")
        if size is not None and j >= size:
            raise BadField(
                f"context[{k}]",
                f"document index {j} is outside the pool of {size} paragraphs "
                "(is --source the HotpotQA dev file the set was made from?)",
            )


def expand_context(indices: Any, pool: Sequence[str]) -> str:
    """The context text of a list of document indices (``BadField`` if invalid)."""
    _check_indices(indices, len(pool))
    return "\n\n".join(
        f"Document {k + 1}:\n{pool[j]}" for k, j in enumerate(indices)
    ).strip()


def is_index_only(path: str | os.PathLike) -> bool:
    """Whether an eval file stores contexts as document indices.

    Reads only the start of the file: the first ``"context"`` value's first
    character (``[`` for indices, ``"`` for text).
    """
    with Path(path).open(encoding="utf-8", errors="replace") as f:
        head = f.read(_PROBE_BYTES)
    at = head.find('"context"')
    if at < 0:
        return False
    rest = head[at + len('"context"') :].lstrip()
    return rest.startswith(":") and rest[1:].lstrip().startswith("[")


def check_index_only(path: str | os.PathLike) -> bool:
    """False for a text file; for an index-only file, check every sample (an
    ``EvalDataError`` lists the bad ones) and return True."""
    if not is_index_only(path):
        return False
    for _ in _expanded(Path(path), pool=None):
        pass
    return True


def _expanded(path: Path, pool: Sequence[str] | None) -> Iterator[dict]:
    """Samples of ``path`` with text contexts; every bad sample reported after the
    last (one ``EvalDataError``), so a writer fed by this writes nothing.
    ``pool=None`` checks the indices' form only and yields nothing useful."""
    problems: list[str] = []
    seen: dict[str, str] = {}
    try:
        for position, (label, raw) in enumerate(read_records(path)):
            try:
                if isinstance(raw, Unreadable):
                    raise BadField("(row)", raw.problem)
                if not isinstance(raw, dict):
                    raise BadField("(row)", f"expected an object, got {show(raw)}")
                sample = dict(raw)
                if pool is None:
                    _check_indices(raw.get("context"))
                    sample["context"] = "(index-only)"
                elif not isinstance(raw.get("context"), str):
                    sample["context"] = expand_context(raw.get("context"), pool)
                row = parse_row(sample, fallback_id=str(position))  # question, answers
                if row["id"] in seen:
                    raise BadField(
                        "id", f"duplicate {row['id']!r} (first at {seen[row['id']]})"
                    )
                seen[row["id"]] = f"{path}: {label}"
            except BadField as bad:
                problems.append(f"{path}: {label}: {bad}")
                continue
            if not problems:
                yield sample
    except DataError as exc:
        raise EvalDataError(str(exc)) from None
    if problems:
        raise EvalDataError(bad_rows_message(str(path), problems, "sample"))
    if not seen:
        raise EvalDataError(f"{path}: no samples (an empty file)")


def expand_file(
    index_only: str | os.PathLike,
    source: str | os.PathLike,
    output: str | os.PathLike,
    progress: bool = True,
) -> int:
    """Write ``output``: the samples of ``index_only`` with text contexts.

    Other fields are kept as they are; samples whose context is already text
    pass through unchanged. Deterministic: same inputs, same bytes. The output
    is a JSON list, one sample per line, written atomically. ``output`` may be
    ``index_only`` itself. Returns the number of samples.
    """
    from tqdm import tqdm

    pool = paragraph_pool(load_hotpotqa_source(source))
    samples = tqdm(
        _expanded(Path(index_only), pool),
        desc=f"expanding {Path(index_only).name}",
        unit=" samples",
        file=sys.stderr,
        disable=not progress,
    )
    return write_json_list(output, samples)

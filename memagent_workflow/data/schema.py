"""The one row schema: ``{"id": str, "question": str, "context": str, "answers": [str]}``.

Every reader validates rows here: ``prepare_data.py`` (training data), the eval
set reader and the workflow (a data item at run time). Accepted spellings, in
order of preference:

==========  ===============================================================
id          ``id``, ``_id``, ``extra_info.index``, ``index`` (first not None;
            a non-empty string or an int), else the row's position where the
            caller allows it
question    ``question``, ``input`` (RULER-HQA), ``prompt[0].content`` (MemAgent
            parquet); a non-empty string
context     ``context``; a string, non-empty unless the caller allows it
answers     ``answers``, ``reward_model.ground_truth``; a string or a non-empty
            list of non-empty strings (an empty gold would match every answer)
==========  ===============================================================

File readers report every bad row (capped at :data:`MAX_LISTED`, with the total)
after reading the whole file, so one run shows all problems; a file of no rows
is refused too. Strings must be Unicode: a lone surrogate (JSON's ``"\\ud800"``)
is refused by field.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from memagent_workflow.data.files import DataError, Unreadable

ID_FIELDS = ("id", "_id", "extra_info.index", "index")
QUESTION_FIELDS = ("question", "input", "prompt[0].content")
ANSWER_FIELDS = ("answers", "reward_model.ground_truth")
#: Bad rows listed in one error; the total is always given.
MAX_LISTED = 20
# A lone UTF-16 surrogate (a JSON "\ud800" escape) is no character: no UTF-8
# writer or tokenizer takes it.
_SURROGATE = re.compile("[\ud800-\udfff]")


class BadField(Exception):
    """One problem of one row: the field(s) concerned and why."""

    def __init__(self, fields: str | tuple[str, ...], problem: str):
        self.fields = (fields,) if isinstance(fields, str) else fields
        self.problem = problem
        super().__init__(f"field {' or '.join(map(repr, self.fields))}: {problem}")


def _lookup(row: dict, path: str) -> Any:
    """``row["a"]["b"]`` for ``"a.b"``, ``row["p"][0]["c"]`` for ``"p[0].c"``."""
    value: Any = row
    for key in path.replace("[0]", ".0").split("."):
        if key == "0":
            if not isinstance(value, list) or not value:
                return None
            value = value[0]
        elif isinstance(value, dict):
            value = value.get(key)
        else:
            return None
    return value


def _first(row: dict, fields: tuple[str, ...]) -> tuple[str | None, Any]:
    """The first of ``fields`` present and not None, with its value."""
    for name in fields:
        if (value := _lookup(row, name)) is not None:
            return name, value
    return None, None


def check_unicode(name: str, text: str) -> str:
    """``text``, or :class:`BadField` where it holds a lone surrogate."""
    if (bad := _SURROGATE.search(text)) is not None:
        raise BadField(
            name,
            f"not valid Unicode: a lone surrogate {bad.group()!r} at character "
            f"{bad.start()}",
        )
    return text


def show(value: Any, limit: int = 80) -> str:
    """A short repr for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_id(row: dict, fallback: str | None = None) -> str:
    """The row's id, or ``fallback`` when it has none (an error if None)."""
    name, value = _first(row, ID_FIELDS)
    if name is None:
        if fallback is None:
            raise BadField(ID_FIELDS, "missing")
        return fallback
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise BadField(
            name, f"expected a non-empty string or an int, got {show(value)}"
        )
    return check_unicode(name, value) if isinstance(value, str) else str(value)


def parse_row(
    row: Any, *, fallback_id: str | None = None, allow_empty_context: bool = False
) -> dict[str, Any]:
    """``{id, question, context, answers}`` of one raw row, or :class:`BadField`."""
    if isinstance(row, Unreadable):
        raise BadField("(row)", row.problem)
    if not isinstance(row, dict):
        raise BadField("(row)", f"expected an object, got {type(row).__name__}")
    row_id = parse_id(row, fallback_id)

    name, question = _first(row, QUESTION_FIELDS)
    if name is None:
        raise BadField(QUESTION_FIELDS, "missing")
    if not isinstance(question, str) or not question.strip():
        raise BadField(name, f"expected a non-empty string, got {show(question)}")
    check_unicode(name, question)

    context = row.get("context")
    if context is None:
        raise BadField("context", "missing")
    if isinstance(context, list):
        raise BadField(
            "context",
            "is a list of document indices (the official index-only format); "
            "expand it with examples/prepare_eval_data.py first",
        )
    if not isinstance(context, str):
        raise BadField("context", f"expected a string, got {show(context)}")
    if not context.strip() and not allow_empty_context:
        raise BadField("context", f"expected a non-empty string, got {show(context)}")
    check_unicode("context", context)

    name, answers = _first(row, ANSWER_FIELDS)
    if name is None:
        raise BadField(ANSWER_FIELDS, "missing")
    if isinstance(answers, str):
        answers = [answers]
    if (
        not isinstance(answers, list | tuple)
        or not answers
        or not all(isinstance(a, str) and a.strip() for a in answers)
    ):
        raise BadField(
            name, f"expected a non-empty list of non-empty strings, got {show(answers)}"
        )
    for answer in answers:
        check_unicode(name, answer)
    return {
        "id": row_id,
        "question": question,
        "context": context,
        "answers": list(answers),
    }


def check_rows(
    records: Iterable[tuple[str, Any]],
    source: str,
    *,
    allow_empty_context: bool = False,
    seen: dict[str, str] | None = None,
    extra: Callable[[dict, dict], None] | None = None,
) -> Iterator[dict[str, Any]]:
    """Validate labelled records lazily; yield the good rows.

    After the last record, raises one :class:`DataError` listing every bad row
    (``source: label: field ...: why``), or saying there was none, so a writer
    fed by this generator writes nothing. Ids must be unique (within ``seen``,
    which several calls may share); a row without an id takes its position.
    ``extra(raw, row)`` may check or add caller-specific fields, raising
    :class:`BadField`.
    """
    seen = {} if seen is None else seen
    problems: list[str] = []
    position = -1
    for position, (label, raw) in enumerate(records):
        where = f"{source}: {label}"
        try:
            row = parse_row(
                raw,
                fallback_id=str(position),
                allow_empty_context=allow_empty_context,
            )
            if row["id"] in seen:
                raise BadField(
                    "id", f"duplicate {row['id']!r} (first at {seen[row['id']]})"
                )
            if extra is not None:
                extra(raw, row)
        except BadField as bad:
            try:  # name the row by its id too, where it has a usable one
                where += f" (id {parse_id(raw)!r})" if isinstance(raw, dict) else ""
            except BadField:
                pass
            problems.append(f"{where}: {bad}")
            continue
        seen[row["id"]] = where
        if not problems:
            yield row
    if problems:
        raise DataError(bad_rows_message(source, problems))
    if position < 0:
        raise DataError(f"{source}: no rows (an empty file); nothing was written")


def bad_rows_message(source: str, problems: list[str], noun: str = "row") -> str:
    """One message for all of a file's bad rows: the first MAX_LISTED and the total."""
    listed = "\n  ".join(problems[:MAX_LISTED])
    more = len(problems) - MAX_LISTED
    return (
        f"{source}: {len(problems)} bad {noun}(s); nothing was written:\n  {listed}"
        + (f"\n  ... and {more} more" if more > 0 else "")
    )

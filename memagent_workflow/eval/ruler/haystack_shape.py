"""The shapes of the SQuAD and HotpotQA haystacks, checked before they are read.

A file or hub dataset of another shape would otherwise fail deep inside the
reading with a bare ``KeyError`` or ``TypeError``; here the first bad record is
named by its place (``data[0].paragraphs[2].qas[1]``, ``item 7 (0-based)``),
its field and what it holds. Duplicate ids are not checked: a haystack's
questions are drawn by position, never by id.
"""

from __future__ import annotations

from typing import Any

from memagent_workflow.data.schema import BadField, check_unicode, show


class _Bad(Exception):
    """A bad record: where it is, and its :class:`BadField`."""

    def __init__(self, where: str, bad: BadField):
        super().__init__(f"{where}: {bad}")


def _field(record: Any, name: str, kind: type, what: str) -> Any:
    """``record[name]``, or :class:`BadField` when it is not a non-empty ``kind``."""
    if not isinstance(record, dict):
        raise BadField("(record)", f"expected an object, got {show(record)}")
    value = record.get(name)
    if not isinstance(value, kind) or (kind is str and not value.strip()):
        raise BadField(name, f"expected {what}, got {show(value)}")
    if kind is str:
        check_unicode(name, value)
    return value


def _strings(value: Any, name: str) -> None:
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise BadField(name, f"expected a list of strings, got {show(value)}")
    for s in value:
        check_unicode(name, s)


def squad_problem(articles: Any) -> str | None:
    """Why ``articles`` (SQuAD's ``data`` list) cannot be read, or None."""
    try:
        if not isinstance(articles, list) or not articles:
            raise _Bad("data", BadField("data", "expected a non-empty list"))
        for i, article in enumerate(articles):
            try:
                paragraphs = _field(article, "paragraphs", list, "a list")
            except BadField as bad:
                raise _Bad(f"data[{i}]", bad) from None
            for j, para in enumerate(paragraphs):
                where = f"data[{i}].paragraphs[{j}]"
                try:
                    _field(para, "context", str, "a non-empty string")
                    qas = _field(para, "qas", list, "a list")
                except BadField as bad:
                    raise _Bad(where, bad) from None
                for k, qa in enumerate(qas):
                    try:
                        _squad_question(qa)
                    except BadField as bad:
                        raise _Bad(f"{where}.qas[{k}]", bad) from None
    except _Bad as bad:
        return str(bad)
    return None


def _squad_question(qa: Any) -> None:
    _field(qa, "question", str, "a non-empty string")
    answers = qa.get("answers", [])
    if not isinstance(answers, list):
        raise BadField("answers", f"expected a list, got {show(answers)}")
    for a, answer in enumerate(answers):
        text = answer.get("text") if isinstance(answer, dict) else None
        if not isinstance(text, str):
            raise BadField(
                f"answers[{a}]",
                f"expected an object with a string 'text', got {show(answer)}",
            )
        check_unicode(f"answers[{a}]", text)


def hotpot_problem(rows: Any) -> str | None:
    """Why ``rows`` (HotpotQA's JSON list) cannot be read, or None."""
    if not isinstance(rows, list) or not rows:
        return "expected a non-empty list of HotpotQA records"
    for i, row in enumerate(rows):
        try:
            _field(row, "question", str, "a non-empty string")
            _field(row, "answer", str, "a non-empty string")
            context = _field(row, "context", list, "a list of [title, sentences]")
            for j, para in enumerate(context):
                if not isinstance(para, list | tuple) or len(para) != 2:
                    raise BadField(
                        f"context[{j}]",
                        f"expected [title, sentences], got {show(para)}",
                    )
                _strings([para[0]], f"context[{j}][0]")
                _strings(para[1], f"context[{j}][1]")
            facts = row.get("supporting_facts")
            if facts is not None and not isinstance(facts, list | tuple):
                raise BadField(
                    "supporting_facts", f"expected a list, got {show(facts)}"
                )
        except BadField as bad:
            return f"item {i} (0-based): {bad}"
    return None

"""RULER-HQA evaluation sets: find, load and check ``eval_{N}.json``.

Each file is a JSON list of samples. Hub files use the original field names
(``input``, ``context``, ``answers``, ``num_docs``, ``index``); ours use
``{id, question, context, answers, num_docs}``. N is the number of documents
(HotpotQA paragraphs) in each sample's context. No AReaL import here.
Downloading them is ``fetch.py``'s, expanding index-only files ``expand.py``'s,
building RULER-HQA-style ones ``build.py``'s.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from memagent_workflow.data.files import DataError, read_records
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
    """Add ``num_docs`` (the file's own count, else the ``Document k:`` headers),
    ``evidence`` where the file gives it (eval traces locate it) and ``set`` (e.g. ``RULER-HQA-style`` for a built set; None if unmarked)."""
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
    evidence = raw.get("evidence")  # optional: the texts that support the answer
    if evidence is not None:
        if not isinstance(evidence, list) or not all(
            isinstance(e, str) and e.strip() for e in evidence
        ):
            raise BadField(
                "evidence",
                f"expected a list of non-empty strings, got {show(evidence)}",
            )
        row["evidence"] = evidence


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

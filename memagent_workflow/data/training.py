"""Training data: any supported file, converted to the project's row schema.

Accepted rows: the MemAgent HotpotQA parquet rows (``prompt[0].content``,
``context``, ``reward_model.ground_truth``, ``extra_info.index``), RULER-HQA
rows (``input``, ``context``, ``answers``, ``index``), or rows already in the
``{id, question, context, answers}`` shape (see :mod:`memagent_workflow.data.schema`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from memagent_workflow.data.files import read_records
from memagent_workflow.data.schema import check_rows


def training_rows(
    paths: Iterable[str | os.PathLike],
    progress: Callable[[Iterable, str], Iterable] = lambda rows, _: rows,
) -> Iterator[dict]:
    """Validated rows of every file in turn; ids unique across all of them.

    A file with bad rows raises one ``DataError`` listing them all, after its
    last row (so an atomic writer fed by this writes nothing).
    """
    seen: dict[str, str] = {}
    for path in paths:
        records = progress(read_records(path), Path(path).name)
        yield from check_rows(records, str(path), seen=seen)

"""The eval tasks, one record each: what a new task needs is one more entry.

A ``Benchmark`` says what its lengths count, where its files are (the
``eval:`` keys of its lengths and data folder, the data and results file
names), where its rows go in ``summary.json`` and how a record is scored.
RULER-HQA counts documents (``eval_{N}.json``, results ``length_{N}.jsonl``,
summary ``lengths``, the original evaluation's scores, which the eval
workflow writes); each RULER task counts tokens (``eval_{task}_{L}.json``,
results ``{task}_{L}.jsonl``, summary ``ruler``, RULER's string match added).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from memagent_workflow.eval import sets
from memagent_workflow.eval.ruler.generate import ruler_file
from memagent_workflow.eval.ruler.scoring import score_record, summary_columns
from memagent_workflow.eval.ruler.tasks import TASKS

Record = dict[str, Any]

#: The RULER-HQA task (eval.lengths: documents per sample); any other name in
#: eval.tasks is a RULER task (eval.ruler_lengths: tokens).
RULER_HQA = "ruler_hqa"

_SYMBOL = {"documents": "N", "tokens": "L"}


@dataclass(frozen=True)
class Benchmark:
    """One eval task: its files, its length unit, its summary rows, its scorer."""

    name: str  # as eval.tasks names it
    label: str  # as messages and reports name it
    unit: str  # what a length counts: "documents" or "tokens"
    lengths_key: str  # the eval: key listing its lengths
    data_root_key: str  # the eval: key naming its data folder
    data_file: Callable[[str | Path, int], Path]  # (data folder, length) -> file
    results_prefix: str  # results: {prefix}_{length}[.{mode}].jsonl
    summary_key: str  # the summary.json list its rows go to
    score: Callable[[Record], Record]  # a record as written to its results
    columns: Callable[[list[Record]], dict[str, Any]]  # its own summary columns
    prepare: str  # the prepare_eval_data.py flags that make its files
    official: bool = False  # eval.preset=paper requires the official sets
    # MemAgent-mode timing lines carry no task/mode keys (they predate them).
    untagged_timing: bool = False

    @property
    def symbol(self) -> str:
        """How a length is written: N (documents) or L (tokens)."""
        return _SYMBOL[self.unit]

    def lengths(self, ev: Any) -> list[int]:
        """Its lengths in the ``eval:`` section ``ev``."""
        return [int(n) for n in getattr(ev, self.lengths_key)]

    def data_root(self, ev: Any) -> str:
        """Its data folder in the ``eval:`` section ``ev``."""
        return getattr(ev, self.data_root_key)


def _as_written(record: Record) -> Record:
    return record  # the eval workflow scored it already (eval/scoring.py)


def _no_columns(records: list[Record]) -> dict[str, Any]:
    return {}


def _ruler_task(name: str) -> Benchmark:
    return Benchmark(
        name=name,
        label=name,
        unit="tokens",
        lengths_key="ruler_lengths",
        data_root_key="ruler_data_root",
        data_file=lambda root, n: ruler_file(root, name, n),
        results_prefix=name,
        summary_key="ruler",
        score=partial(score_record, task=name),
        columns=partial(summary_columns, task=name),
        prepare="--ruler",
    )


#: Every eval task by name, in report order (RULER-HQA, then RULER's tasks).
BENCHMARKS: dict[str, Benchmark] = {
    RULER_HQA: Benchmark(
        name=RULER_HQA,
        label="RULER-HQA",
        unit="documents",
        lengths_key="lengths",
        data_root_key="data_root",
        data_file=sets.eval_file,
        results_prefix="length",
        summary_key="lengths",
        score=_as_written,
        columns=_no_columns,
        prepare="--download or --build",
        official=True,
        untagged_timing=True,
    ),
    **{name: _ruler_task(name) for name in TASKS},
}
#: The summary.json lists, in order.
SUMMARY_KEYS = tuple(dict.fromkeys(b.summary_key for b in BENCHMARKS.values()))
_BY_PREFIX = {b.results_prefix: b for b in BENCHMARKS.values()}


def by_results_prefix(prefix: str) -> Benchmark | None:
    """The benchmark whose results files start with ``prefix``, if any."""
    return _BY_PREFIX.get(prefix)

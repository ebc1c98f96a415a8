"""What one eval run covers: (task, length, mode) targets, their files and rows.

A target is one eval file read in one mode; its task's ``Benchmark``
(``benchmarks.py``) names the files: RULER-HQA reads
``{data_root}/eval_{N}.json`` (N documents) and writes ``length_{N}``, a RULER
task reads ``{ruler_data_root}/eval_{task}_{L}.json`` (L tokens) and writes
``{task}_{L}``; results go to ``{output_dir}/{stem}[.{mode}].jsonl``. MemAgent
mode keeps the bare name, so earlier RULER-HQA runs read as before. Several
modes and tasks can share one output folder: the summary and the table show
every result file found there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memagent_workflow.eval import diagnostics, results
from memagent_workflow.eval.benchmarks import (
    BENCHMARKS,
    SUMMARY_KEYS,
    Benchmark,
    by_results_prefix,
)
from memagent_workflow.eval.config import MODES, EvalConfig

_RESULT = re.compile(r"^(?P<prefix>[a-z0-9_]+?)_(?P<n>\d+)(?:\.(?P<mode>[a-z_]+))?$")


@dataclass(frozen=True)
class Target:
    """One eval file in one mode."""

    task: str
    length: int
    mode: str

    @property
    def benchmark(self) -> Benchmark:
        return BENCHMARKS[self.task]

    @property
    def stem(self) -> str:
        return f"{self.benchmark.results_prefix}_{self.length}"

    @property
    def name(self) -> str:
        return self.stem if self.mode == "memagent" else f"{self.stem}.{self.mode}"

    def data_file(self, ev: EvalConfig) -> Path:
        b = self.benchmark
        return b.data_file(b.data_root(ev), self.length)

    def results_file(self, output_dir: str | Path) -> Path:
        return Path(output_dir) / f"{self.name}.jsonl"

    @property
    def timing_keys(self) -> dict[str, str]:
        """Keys that tell this target's timing lines apart (none where its
        MemAgent-mode lines predate them: RULER-HQA)."""
        if self.benchmark.untagged_timing and self.mode == "memagent":
            return {}
        return {"task": self.task, "mode": self.mode}

    def finish(self, record: dict[str, Any]) -> dict[str, Any]:
        """The record as written, scored as its benchmark scores it."""
        return self.benchmark.score(record)


def planned(ev: EvalConfig) -> list[Target]:
    """The targets of this run's config, in run order."""
    return [
        Target(task, n, ev.mode)
        for task in ev.tasks
        for n in BENCHMARKS[task].lengths(ev)
    ]


def present(output_dir: str | Path) -> list[Target]:
    """Targets with a results file in ``output_dir``."""
    found = []
    for path in Path(output_dir).glob("*.jsonl"):
        m = _RESULT.match(path.stem)
        b = by_results_prefix(m["prefix"]) if m else None
        mode = (m["mode"] if m else None) or "memagent"
        if b is not None and mode in MODES:
            found.append(Target(b.name, int(m["n"]), mode))
    return found


def _order(t: Target) -> tuple:
    return (list(BENCHMARKS).index(t.task), MODES.index(t.mode), t.length)


def summarize(
    output_dir: str | Path,
    expected: dict[Target, list[str]],
    meta: dict[str, Any],
    n_samples: int = 1,
) -> dict[str, Any]:
    """``summary.json``: a list of rows per ``Benchmark.summary_key`` (``lengths``:
    RULER-HQA rows, every mode; ``ruler``: RULER task rows); each row carries
    ``task`` and ``mode``. ``expected``: ids per target, each sampled
    ``n_samples`` times."""
    timing = results.read_timing(output_dir)
    every = sorted(set(present(output_dir)) | set(expected), key=_order)
    lists: dict[str, list[dict[str, Any]]] = {key: [] for key in SUMMARY_KEYS}
    for t in every:
        keys = t.timing_keys
        seg = [
            x
            for x in timing
            if all(x.get(k) == v for k, v in keys.items()) and (keys or "task" not in x)
        ]
        records = results.read_records(t.results_file(output_dir))
        ids = expected.get(t)
        row = results.summarize_length(t.length, records, ids, seg, n_samples)
        if ids is not None:
            wanted = {(str(i), k) for i in ids for k in range(n_samples)}
            records = {i: r for i, r in records.items() if i in wanted}
        recs = list(records.values())
        row.update(task=t.task, mode=t.mode)
        if t.mode == "full_context":
            row["cut_samples"] = sum(1 for r in recs if (r.get("cut_tokens") or 0) > 0)
            cuts = [r.get("cut_tokens") or 0 for r in recs]
            row["mean_cut_tokens"] = sum(cuts) / len(cuts) if cuts else None
        row.update(t.benchmark.columns(recs))
        row["memory"] = diagnostics.target_split(
            t.results_file(output_dir), records, t.mode
        )
        lists[t.benchmark.summary_key].append(row)
    return {"meta": {**meta, "denominators": results.DENOMINATORS}, **lists}

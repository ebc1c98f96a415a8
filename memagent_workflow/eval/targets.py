"""What one eval run covers: (task, length, mode) targets, their files and rows.

A target is one eval file read in one mode. RULER-HQA files are
``{data_root}/eval_{N}.json`` (N documents), RULER task files
``{ruler_data_root}/eval_{task}_{L}.json`` (L tokens). Results go to
``{output_dir}/{stem}[.{mode}].jsonl`` with stem ``length_{N}`` (RULER-HQA) or
``{task}_{L}``; MemAgent mode keeps the bare name, so earlier RULER-HQA runs
read as before. Several modes and tasks can share one output folder: the
summary and the table show every result file found there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memagent_workflow.eval import results, sets
from memagent_workflow.eval.config import MODES, RULER_HQA, EvalConfig
from memagent_workflow.eval.ruler.generate import ruler_file
from memagent_workflow.eval.ruler.scoring import score_record
from memagent_workflow.eval.ruler.tasks import TASKS

_RESULT = re.compile(
    r"^(?:length|(?P<task>[a-z0-9_]+?))_(?P<n>\d+)(?:\.(?P<mode>[a-z_]+))?$"
)


@dataclass(frozen=True)
class Target:
    """One eval file in one mode."""

    task: str
    length: int
    mode: str

    @property
    def stem(self) -> str:
        return (
            f"length_{self.length}"
            if self.task == RULER_HQA
            else f"{self.task}_{self.length}"
        )

    @property
    def name(self) -> str:
        return self.stem if self.mode == "memagent" else f"{self.stem}.{self.mode}"

    def data_file(self, ev: EvalConfig) -> Path:
        if self.task == RULER_HQA:
            return sets.eval_file(ev.data_root, self.length)
        return ruler_file(ev.ruler_data_root, self.task, self.length)

    def results_file(self, output_dir: str | Path) -> Path:
        return Path(output_dir) / f"{self.name}.jsonl"

    @property
    def timing_keys(self) -> dict[str, str]:
        """Keys that tell this target's timing lines apart (none for RULER-HQA
        in MemAgent mode, whose lines predate them)."""
        if self.task == RULER_HQA and self.mode == "memagent":
            return {}
        return {"task": self.task, "mode": self.mode}

    def finish(self, record: dict[str, Any]) -> dict[str, Any]:
        """The record as written: RULER tasks get their RULER score."""
        return record if self.task == RULER_HQA else score_record(record, self.task)


def planned(ev: EvalConfig) -> list[Target]:
    """The targets of this run's config, in run order."""
    out = []
    for task in ev.tasks:
        lengths = ev.lengths if task == RULER_HQA else ev.ruler_lengths
        out += [Target(task, int(n), ev.mode) for n in lengths]
    return out


def present(output_dir: str | Path) -> list[Target]:
    """Targets with a results file in ``output_dir``."""
    found = []
    for path in Path(output_dir).glob("*.jsonl"):
        m = _RESULT.match(path.stem)
        if not m:
            continue
        task = m["task"] or RULER_HQA
        mode = m["mode"] or "memagent"
        if (task == RULER_HQA or task in TASKS) and mode in MODES:
            found.append(Target(task, int(m["n"]), mode))
    return found


def _order(t: Target) -> tuple:
    task_rank = 0 if t.task == RULER_HQA else 1 + list(TASKS).index(t.task)
    return (task_rank, MODES.index(t.mode), t.length)


def _pct(rows: list[dict[str, Any]], key: str) -> float | None:
    vals = [float(r.get(key) or 0.0) for r in rows]
    return 100.0 * sum(vals) / len(vals) if vals else None


def summarize(
    output_dir: str | Path,
    expected: dict[Target, list[str]],
    meta: dict[str, Any],
    n_samples: int = 1,
) -> dict[str, Any]:
    """``summary.json``: ``lengths`` (RULER-HQA rows, every mode) and ``ruler``
    (RULER task rows); each row carries ``task`` and ``mode``. ``expected``:
    ids per target, each sampled ``n_samples`` times."""
    timing = results.read_timing(output_dir)
    every = sorted(set(present(output_dir)) | set(expected), key=_order)
    hqa, ruler = [], []
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
        if t.task == RULER_HQA:
            hqa.append(row)
        else:
            ok = [r for r in recs if r.get("error") is None]
            row.update(
                metric=TASKS[t.task].metric,
                score=_pct(recs, "ruler_score"),
                score_non_failed=_pct(ok, "ruler_score"),
            )
            ruler.append(row)
    return {
        "meta": {**meta, "denominators": results.DENOMINATORS},
        "lengths": hqa,
        "ruler": ruler,
    }

"""Eval results on disk: one JSONL per target, appended as samples finish.

A results file (``length_{N}.jsonl`` for RULER-HQA; its name comes from the
target, ``targets.py``) holds one JSON object per line and per finished sample.
A sample may appear more than once (a failed sample retried by a later run);
readers take the last line per id. A line is written with one ``write`` and
then flushed and fsync'ed, so a killed run leaves at most a torn last line,
which ``ResultWriter`` cuts off before appending. ``timing.jsonl`` gets one
line per (run, length) finished, for wall time and generated tokens/s.
No AReaL import here.

Record keys: ``id``; ``repeat`` (which of ``eval.n_samples`` samples of the
question: a sample is ``(id, repeat)``); ``prediction`` (the final turn's text,
null if the sample failed); ``extracted`` (the answer the protocol reads from
it: a box, or what follows "the answer is"; null if none); ``answers``;
``counted`` (false for an empty output, which the original counts in no
average); ``sub_em``, ``em``, ``f1`` (the original's per-sample scores, see
``eval/scoring.py``; an error scores 0); ``n_chunks`` and
``context_tokens`` (the document as read);
``output_tokens`` (all turns); ``latency_s`` (the sample's wall time, turns
run one after another); ``error`` (null, or why the sample failed after its
retries); ``attempt`` (a random id of this attempt at the sample: its trace
line carries the same, ``trace.join``; absent from lines written before it).
"""

from __future__ import annotations

import json
import os
import statistics
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memagent_workflow.eval.scoring import eval_metrics

RECORD_KEYS = (
    "id",
    "repeat",
    "prediction",
    "extracted",
    "answers",
    "counted",
    "sub_em",
    "em",
    "f1",
    "n_chunks",
    "context_tokens",
    "output_tokens",
    "latency_s",
    "error",
    "attempt",
)
SUMMARY_FILE = "summary.json"
TIMING_FILE = "timing.jsonl"


# ------------------------------------------------------------------ records


def make_record(
    sample_id: str,
    answers: list[str],
    prediction: str | None,
    *,
    protocol: str = "boxed",
    repeat: int = 0,
    n_chunks: int | None = None,
    context_tokens: int | None = None,
    output_tokens: int = 0,
    latency_s: float = 0.0,
    error: str | None = None,
    attempt: str | None = None,
) -> dict[str, Any]:
    """One result line, scored as the original evaluation scores ``protocol``.

    An error scores 0 and is counted (the "all" denominator counts it as
    wrong); an empty prediction is not counted (the original skips it).
    ``attempt``: this attempt's id (a new random one by default).
    """
    metrics = None
    if error is None and prediction is not None:
        metrics = eval_metrics(prediction, answers, protocol)
    counted = error is not None or metrics is not None
    metrics = metrics or {"answer": None, "sub_em": 0.0, "em": 0.0, "f1": 0.0}
    return {
        "id": str(sample_id),
        "repeat": int(repeat),
        "prediction": prediction,
        "extracted": metrics["answer"],
        "answers": list(answers),
        "counted": counted,
        "sub_em": metrics["sub_em"],
        "em": metrics["em"],
        "f1": metrics["f1"],
        "n_chunks": n_chunks,
        "context_tokens": context_tokens,
        "output_tokens": int(output_tokens),
        "latency_s": round(float(latency_s), 3),
        "error": error,
        "attempt": attempt or uuid.uuid4().hex[:16],
    }


SampleKey = tuple[str, int]


def sample_key(record: dict[str, Any]) -> SampleKey:
    """``(id, repeat)``: what a record answers (a line without ``repeat``: 0)."""
    return str(record["id"]), int(record.get("repeat") or 0)


def read_records(path: str | os.PathLike) -> dict[SampleKey, dict[str, Any]]:
    """The last record per sample ``(id, repeat)`` (insertion order = first
    appearance); {} if no file.

    A line that is not a JSON object with an ``id`` is skipped: only the last
    line can be torn by a kill, and it belongs to a sample that was in flight.
    """
    path = Path(path)
    out: dict[SampleKey, dict[str, Any]] = {}
    if not path.is_file():
        return out
    with path.open("rb") as f:
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and "id" in rec:
                out[sample_key(rec)] = rec
    return out


def scored_ids(records: dict[SampleKey, dict[str, Any]]) -> set[SampleKey]:
    """Samples whose last record has no error (a resumed run skips them)."""
    return {i for i, r in records.items() if r.get("error") is None}


class ResultWriter:
    """Appends records to one JSONL file, each durable before ``write`` returns."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = self.path.open("ab")
        self._drop_torn_tail()

    def _drop_torn_tail(self) -> None:
        """Cut a last line without its newline (a write cut short by a kill)."""
        size = self._f.seek(0, os.SEEK_END)
        if size == 0:
            return
        with self.path.open("rb") as r:
            data = r.read()
        if data.endswith(b"\n"):
            return
        keep = data.rfind(b"\n") + 1
        self._f.truncate(keep)
        self._f.seek(keep)

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        self._f.write(line.encode("utf-8"))
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def append_timing(
    output_dir: str | os.PathLike,
    n: int,
    wall_s: float,
    samples: int,
    tokens: int,
    **keys: str,
) -> None:
    """Log one finished (run, length) segment for wall time and tokens/s;
    ``keys`` (task, mode) tell other eval files' segments apart."""
    rec = {"length": n, "wall_s": wall_s, "samples": samples, "output_tokens": tokens}
    rec.update(keys)
    with (Path(output_dir) / TIMING_FILE).open("a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_timing(output_dir: str | os.PathLike) -> list[dict[str, Any]]:
    path = Path(output_dir) / TIMING_FILE
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


# ------------------------------------------------------------------ summary


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


METRICS = ("sub_em", "em", "f1")
DENOMINATORS = (
    "sub_em, em, f1 ('all'): % over every counted sample, a failed one counting as "
    "wrong; *_non_failed: % over the counted samples that did not fail (the "
    "original evaluation's convention: it drops failed requests). An empty output "
    "is counted in neither (the original skips it: 'empty'). Means pool every "
    "repeat; *_std: standard deviation of the per-repeat accuracies across the "
    "eval.n_samples repeats (null for one); *_best: the best repeat (best-of-n "
    "runs, as slime-agentic reports)"
)


def _pct(rows: list[dict[str, Any]], key: str) -> float | None:
    return 100.0 * sum(float(r[key]) for r in rows) / len(rows) if rows else None


def _spread(rows: list[dict[str, Any]], key: str) -> tuple[float | None, float | None]:
    """(std across repeats, best repeat) of ``key``'s accuracy over ``rows``."""
    runs = [
        v
        for k in sorted({int(r.get("repeat") or 0) for r in rows})
        if (v := _pct([r for r in rows if int(r.get("repeat") or 0) == k], key))
        is not None
    ]
    std = statistics.stdev(runs) if len(runs) > 1 else None
    return std, (max(runs) if runs else None)


def summarize_length(
    n: int,
    records: dict[SampleKey, dict[str, Any]],
    expected_ids: Iterable[str] | None = None,
    timing: Iterable[dict[str, Any]] = (),
    n_samples: int = 1,
) -> dict[str, Any]:
    """Numbers for one length, with both denominators and the spread over repeats.

    ``sub_em``, ``em``, ``f1``: percent over every counted sample (all
    repeats), failed ones counting as wrong. ``*_non_failed``: percent over
    the ``non_failed`` samples only. ``empty``: outputs counted in neither (the
    original skips them). ``sub_em_std`` / ``sub_em_best`` (and their
    ``_non_failed`` twins): std and best of the per-repeat accuracies. Samples
    ``(id, repeat)`` of ``expected_ids`` x ``n_samples`` with no record at all
    are ``missing``.
    """
    records = {sample_key(r): r for r in records.values()}
    if expected_ids is not None:
        wanted = {(str(i), k) for i in expected_ids for k in range(n_samples)}
        records = {i: r for i, r in records.items() if i in wanted}
        missing: int | None = len(wanted) - len(records)
    else:
        missing = None
    recs = list(records.values())
    counted = [r for r in recs if r.get("counted", True)]
    ok = [r for r in counted if r.get("error") is None]
    seg = [t for t in timing if t.get("length") == n]
    wall = sum(float(t["wall_s"]) for t in seg)
    tokens = sum(int(t["output_tokens"]) for t in seg)
    spread = {}
    for tail, rows in (("", counted), ("_non_failed", ok)):
        std, best = _spread(rows, "sub_em")
        spread[f"sub_em{tail}_std"], spread[f"sub_em{tail}_best"] = std, best
    return {
        "length": n,
        "n": len(recs),
        "repeats": len({int(r.get("repeat") or 0) for r in recs}),
        "missing": missing,
        "failures": sum(r.get("error") is not None for r in recs),
        "empty": len(recs) - len(counted),
        "non_failed": len(ok),
        **{key: _pct(counted, key) for key in METRICS},
        **{f"{key}_non_failed": _pct(ok, key) for key in METRICS},
        **spread,
        "mean_chunks": _mean(r.get("n_chunks") for r in recs),
        "mean_context_tokens": _mean(r.get("context_tokens") for r in recs),
        "wall_s": wall if seg else None,
        "tokens_per_s": tokens / wall if seg and wall > 0 else None,
    }

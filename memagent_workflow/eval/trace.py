"""Memory traces of eval episodes: per sample, per turn, what the memory held.

With ``eval.trace`` on, the eval workflow records every memory turn of a
MemAgent-mode sample: the chunk it read (index and token span), the memory it
wrote (text, only where it changed, and its token count), whether that memory
holds the gold answer, and whether the chunk holds the evidence. Where the
evidence sits, and how it was found (the set's evidence texts, or the answer's
words only): ``evidence.py``. Matching is on SQuAD-normalised words, the
normalisation the scores use.

``examples/eval.py`` writes one trace line per finished sample to
``{results name}.trace.jsonl`` beside the results file, before the sample's
result line, with the same append + fsync as results (``ResultWriter``), so a
scored sample always has its trace and a resumed run skips both. A trace line
carries its result line's ``attempt`` id; ``join`` pairs a result only with
the trace of the same attempt, so a trace left by a run killed before its
result line is never shown beside a later attempt's result. No AReaL import
here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memagent_workflow.eval.evidence import words
from memagent_workflow.eval.results import ResultWriter, SampleKey, read_records

TRACE_SUFFIX = ".trace.jsonl"
RULER_SET = "RULER"  # RULER task files mark their samples so (ruler/generate.py)


def trace_file(results_file: str | Path) -> Path:
    """``length_50.jsonl`` -> ``length_50.trace.jsonl`` (beside it)."""
    path = Path(results_file)
    return path.with_name(path.name.removesuffix(".jsonl") + TRACE_SUFFIX)


def read_traces(results_file: str | Path) -> dict[SampleKey, dict[str, Any]]:
    """The last trace per sample ``(id, repeat)`` of a results file; {} if none."""
    return read_records(trace_file(results_file))


def gold_terms(answers: list[str], set_marker: str | None) -> list[str]:
    """What the memory must hold: RULER needs every value, RULER-HQA is scored
    against the first gold answer only (``scoring.py``)."""
    return list(answers) if set_marker == RULER_SET else list(answers[:1])


def holds(text: str, terms: list[list[str]]) -> bool:
    """Whether ``text`` holds every term (normalised words, contiguous)."""
    if not terms:
        return False
    have = words(text)
    return all(_contains(have, t) for t in terms)


def _contains(have: list[str], term: list[str]) -> bool:
    n = len(term)
    return n > 0 and any(have[i : i + n] == term for i in range(len(have) - n + 1))


@dataclass
class TraceRecorder:
    """One sample's trace, filled turn by turn by the eval workflow."""

    decode: Callable[[np.ndarray], str]
    question: str
    terms: list[str]  # the gold answer(s) the memory must hold
    chunk_tokens: int
    context_tokens: int
    n_chunks: int
    evidence_chunks: list[int]
    evidence_source: str  # evidence.SET (the set's texts) or evidence.ANSWER
    initial_memory: str
    evidence_excerpts: list[dict[str, Any]] = field(default_factory=list)
    on_turn: Callable[[int, int], None] | None = None  # (turn, memory tokens)
    turns: list[dict[str, Any]] = field(default_factory=list)
    final_memory: str = ""

    def __post_init__(self) -> None:
        self._terms = [w for w in (words(t) for t in self.terms) if w]
        self._evidence = set(self.evidence_chunks)
        self.final_memory = self.initial_memory

    def add(self, written: np.ndarray, carried: str | None = None) -> None:
        """A memory turn wrote ``written``; ``carried``: the text passed on
        instead (the memory-wiped control), None if the written one is."""
        k = len(self.turns)
        text = self.decode(written)
        last = self.turns[-1]["text"] if self.turns else self.initial_memory
        self.turns.append(
            {
                "chunk": k,
                "start": k * self.chunk_tokens,
                "end": min((k + 1) * self.chunk_tokens, self.context_tokens),
                "evidence": k in self._evidence,
                "memory_tokens": int(len(written)),
                "text": text,
                "changed": text != last,
                "holds": holds(text, self._terms),
                "wiped": carried is not None,
            }
        )
        self.final_memory = text if carried is None else carried
        if self.on_turn is not None:
            self.on_turn(k, int(len(written)))

    def as_dict(self) -> dict[str, Any]:
        """The trace line (less the id and score, which eval.py adds); a memory
        that did not change since the previous turn is stored as null."""
        caught = next((t["chunk"] for t in self.turns if t["holds"]), None)
        kept = holds(self.final_memory, self._terms)
        lost = None
        for prev, cur in zip(self.turns, self.turns[1:], strict=False):
            if prev["holds"] and not cur["holds"]:
                lost = cur["chunk"]  # the last turn that dropped it
        if self.turns and self.turns[-1]["holds"] and not kept:
            lost = self.turns[-1]["chunk"]  # wiped after the last turn
        turns = [
            {**{k: v for k, v in t.items() if k != "text"}, "memory": t["text"]}
            if t["changed"]
            else {**{k: v for k, v in t.items() if k != "text"}, "memory": None}
            for t in self.turns
        ]
        return {
            "question": self.question,
            "terms": self.terms,
            "chunk_tokens": self.chunk_tokens,
            "context_tokens": self.context_tokens,
            "n_chunks": self.n_chunks,
            "evidence_chunks": self.evidence_chunks,
            "evidence_source": self.evidence_source,
            "evidence_excerpts": self.evidence_excerpts,
            "initial_memory": self.initial_memory,
            "turns": turns,
            "final_memory": self.final_memory,
            "read": bool(self.evidence_chunks),
            "caught": caught is not None,
            "caught_turn": caught,
            "lost_turn": lost if caught is not None and not kept else None,
            "kept": kept,
        }


def answered(record: dict[str, Any]) -> bool:
    """Whether a scored result record answered right (RULER: its string-match
    score, RULER-HQA: sub-EM, the scores the tables show)."""
    score = record.get("ruler_score", record.get("sub_em"))
    return record.get("error") is None and float(score or 0.0) >= 1.0


def joined(record: dict[str, Any], trace: dict[str, Any]) -> bool:
    """Whether ``trace`` is the trace of ``record``: a scored record and the
    same attempt (a failed sample has no trace; traces and results written
    before attempts were recorded carry none and pair as before)."""
    return record.get("error") is None and trace.get("attempt") == record.get("attempt")


def join(
    records: dict[SampleKey, dict[str, Any]], traces: dict[SampleKey, dict[str, Any]]
) -> dict[SampleKey, dict[str, Any]]:
    """The traces of ``records`` (per sample, the trace of its last record)."""
    return {k: t for k, t in traces.items() if k in records and joined(records[k], t)}


class TraceWriter:
    """Appends trace lines (``ResultWriter``'s crash safety); ``path`` None: off."""

    def __init__(self, path: str | Path | None):
        self._writer = ResultWriter(path) if path is not None else None

    def write(self, record: dict[str, Any], trace: dict[str, Any] | None) -> None:
        """The trace of a scored ``record``, with its id, answer and score."""
        if self._writer is None or trace is None:
            return
        keys = (
            "id",
            "repeat",
            "attempt",
            "prediction",
            "extracted",
            "answers",
            "error",
        )
        line = {k: record.get(k) for k in keys}
        self._writer.write({**line, **trace, "answered": answered(record)})

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._writer is not None:
            self._writer.close()

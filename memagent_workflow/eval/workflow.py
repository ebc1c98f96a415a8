"""MemAgent for evaluation: one episode per question, returned as a result record.

``arun_episode`` returns a small plain dict (see ``results.make_record``), not
training rows; AReaL passes such dicts through when
``rollout.check_trajectory_format`` is false. It never raises and never returns
None: a sample whose episode fails comes back as a record with ``error`` set,
so the caller can count it. The episode is not run again here: its model calls
already waited out transient failures (``memagent.engine_retry_s``, the one
retry layer: `engine_calls.agenerate_with_retry`), and a rerun of the eval
retries every sample recorded with an error.

The sample loop is written once, here, for every eval mode: ``prepare`` reads
a sample (refusing what no attempt can fix), ``answer`` makes the one attempt
and ``attempt`` builds its record; the baselines (``baseline.py``) override
``prepare`` and ``answer``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from areal.api import InferenceEngine
from areal.utils import logging

from memagent_workflow.chunking import cut_refusal
from memagent_workflow.data.schema import BadField, parse_id
from memagent_workflow.episode import Document, Episode
from memagent_workflow.eval import evidence
from memagent_workflow.eval.results import make_record
from memagent_workflow.eval.trace import TraceRecorder, gold_terms
from memagent_workflow.rows import Turn
from memagent_workflow.workflow import MemAgentWorkflow

logger = logging.getLogger("MemAgentEval")

#: How the ``error`` of a sample whose attempt raised begins.
FAILED = "episode failed: "


class SampleRefused(Exception):
    """A sample no attempt can answer; its message is the record's ``error``."""


def describe_error(exc: BaseException) -> str:
    """How a failure reads in a record's ``error``."""
    if isinstance(exc, SampleRefused):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"[:500]


@dataclass
class EvalSample:
    """What a result record says about one sample besides its answer."""

    id: str
    answers: list[str]
    repeat: int  # which sample of the question this is (eval.py adds it)
    fields: dict[str, Any] = field(default_factory=dict)  # make_record's, as read
    extra: dict[str, Any] = field(default_factory=dict)  # keys added to the record
    start: float = field(default_factory=time.perf_counter)
    trace: TraceRecorder | None = None  # eval.trace: the memory turn by turn

    @classmethod
    def of(cls, data: Any) -> EvalSample:
        """Id, answers and repeat of a data item, even a malformed one (best
        effort: a record must name it)."""
        raw = data if isinstance(data, dict) else {}
        try:
            sample_id = parse_id(raw, fallback="<no id>")
        except BadField:
            sample_id = "<bad id>"
        answers = raw.get("answers") or []
        answers = [answers] if isinstance(answers, str) else list(answers)
        repeat = raw.get("repeat", 0)
        if not isinstance(repeat, int) or isinstance(repeat, bool):
            repeat = 0
        return cls(sample_id, [a for a in answers if isinstance(a, str)], repeat)

    def elapsed(self) -> float:
        return time.perf_counter() - self.start


@dataclass
class TracedEpisode(Episode):
    """An episode whose memory turns are also written to a trace."""

    recorder: TraceRecorder | None = None


class MemAgentEvalWorkflow(MemAgentWorkflow):
    """One episode per sample, scored as the original scores the answer
    protocol; no chunk is ever cut. ``trace``: record the memory turn by turn
    (``eval.trace``, ``trace.py``); ``on_turn(turn, memory tokens)`` is called
    after each memory turn of a traced sample (``examples/ask.py``'s progress)."""

    def __init__(
        self,
        *args: Any,
        trace: bool = False,
        on_turn: Callable[[int, int], None] | None = None,
        **kwargs: Any,
    ):
        kwargs["group_size"] = 1
        super().__init__(*args, **kwargs)
        self.trace = trace
        self.on_turn = on_turn

    async def arun_episode(
        self, engine: InferenceEngine, data: dict[str, Any]
    ) -> dict[str, Any]:
        sample = EvalSample.of(data)
        try:
            work = await self.prepare(sample, data)
        except Exception as exc:  # malformed sample or no room: retrying will not help
            return self.record(sample, None, error=describe_error(exc))
        return await self.attempt(engine, sample, work)

    async def prepare(self, sample: EvalSample, data: dict[str, Any]) -> Any:
        """The document, chunked; its size goes to ``sample.fields``. A document
        that would need more than ``max_chunks`` chunks is refused, not cut."""
        doc = await self.read_document(data)
        tokens = doc.context_tokens
        sample.fields.update(n_chunks=len(doc.chunks), context_tokens=tokens)
        why = cut_refusal(tokens, self.chunk_tokens, self.max_chunks)
        if why:
            sample.fields["n_chunks"] = -(-tokens // self.chunk_tokens)
            raise SampleRefused(why)
        if self.trace:
            sample.trace = await asyncio.to_thread(self.recorder, doc, data)
        return doc, sample.trace

    def decode(self, ids: np.ndarray) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def recorder(self, doc: Document, data: dict[str, Any]) -> TraceRecorder:
        """A sample's empty trace, its evidence located in the chunks (the
        set's evidence texts, else the answer's words: ``evidence.py``)."""
        terms = gold_terms(doc.answers, data.get("set"))
        texts, source = evidence.sample_evidence(data, terms)
        chunks, excerpts = evidence.locate(self.decode, doc.chunks, texts)
        return TraceRecorder(
            decode=self.decode,
            question=doc.question,
            terms=terms,
            chunk_tokens=self.chunk_tokens,
            context_tokens=doc.context_tokens,
            n_chunks=len(doc.chunks),
            evidence_chunks=chunks,
            evidence_source=source,
            evidence_excerpts=excerpts,
            initial_memory=self.decode(self.initial_memory),
            on_turn=self.on_turn,
        )

    async def answer(self, engine: InferenceEngine, work: Any) -> tuple[str, int]:
        """One attempt: the final answer's text and the tokens generated."""
        doc, recorder = work
        ep = TracedEpisode(recorder=recorder)
        ep = await self.run_episode(engine, doc, keep_turns=False, ep=ep)
        return ep.answer, ep.output_tokens

    def next_memory(self, turn: Turn, ep: Episode) -> np.ndarray:
        """The base workflow's, written to the trace of a traced episode."""
        memory = super().next_memory(turn, ep)
        recorder = getattr(ep, "recorder", None)
        if recorder is not None:
            wiped = self.decode(self.initial_memory) if self.wipe_memory else None
            recorder.add(memory, carried=wiped)
        return memory

    async def attempt(
        self, engine: InferenceEngine, sample: EvalSample, work: Any
    ) -> dict[str, Any]:
        """The record of one ``answer`` attempt, or of its failure (not retried
        here: see the module's docstring)."""
        # The trace and the scored record are built inside the try too: what
        # raises there would otherwise reach AReaL's executor, which logs it and
        # gives None for the sample (examples/ask.py's one episode, lost).
        try:
            prediction, output_tokens = await self.answer(engine, work)
            if sample.trace is not None:
                sample.extra["trace"] = sample.trace.as_dict()
            return self.record(
                sample,
                prediction,
                output_tokens=output_tokens,
                latency_s=sample.elapsed(),
            )
        except Exception as exc:
            sample.extra.pop("trace", None)
            error = describe_error(exc)
            logger.warning(f"sample {sample.id} failed (a rerun retries it): {error}")
            return self.record(
                sample, None, latency_s=sample.elapsed(), error=f"{FAILED}{error}"
            )

    def record(
        self, sample: EvalSample, prediction: str | None, **kw: Any
    ) -> dict[str, Any]:
        """The sample's result line, scored under the answer protocol."""
        rec = make_record(
            sample.id,
            sample.answers,
            prediction,
            protocol=self.answer_protocol,
            repeat=sample.repeat,
            **sample.fields,
            **kw,
        )
        return {**rec, **sample.extra}

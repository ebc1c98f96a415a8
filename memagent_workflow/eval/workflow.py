"""MemAgent for evaluation: one episode per question, returned as a result record.

``arun_episode`` returns a small plain dict (see ``results.make_record``), not
training rows; AReaL passes such dicts through when
``rollout.check_trajectory_format`` is false. It never raises and never returns
None: a sample whose episode keeps failing comes back, after ``max_retries``
more attempts, as a record with ``error`` set, so the caller can count it.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from areal.api import InferenceEngine
from areal.utils import logging

from memagent_workflow.chunking import cut_refusal
from memagent_workflow.data.schema import BadField, parse_id
from memagent_workflow.eval.results import make_record
from memagent_workflow.workflow import MemAgentWorkflow

logger = logging.getLogger("MemAgentEval")


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def _id_and_answers(data: Any) -> tuple[str, list[str], int]:
    """What a result record needs even for a malformed sample (best effort):
    id, answers and ``repeat`` (which sample of the question this is; eval.py
    adds it to the data item)."""
    raw = data if isinstance(data, dict) else {}
    try:
        sample_id = parse_id(raw, fallback="<no id>")
    except BadField:
        sample_id = "<bad id>"
    answers = raw.get("answers") or []
    answers = [answers] if isinstance(answers, str) else list(answers)
    repeat = raw.get("repeat", 0)
    repeat = repeat if isinstance(repeat, int) and not isinstance(repeat, bool) else 0
    return sample_id, [a for a in answers if isinstance(a, str)], repeat


class MemAgentEvalWorkflow(MemAgentWorkflow):
    """One episode per sample, scored as the original scores the answer
    protocol; no chunk is ever cut."""

    def __init__(self, *args: Any, max_retries: int = 2, **kwargs: Any):
        kwargs["group_size"] = 1
        super().__init__(*args, **kwargs)
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.max_retries = max_retries

    async def arun_episode(
        self, engine: InferenceEngine, data: dict[str, Any]
    ) -> dict[str, Any]:
        sample_id, answers, repeat = _id_and_answers(data)
        record = partial(make_record, protocol=self.answer_protocol, repeat=repeat)
        start = time.perf_counter()
        try:
            doc = await self.read_document(data)
        except Exception as exc:  # malformed sample: retrying will not help
            return record(sample_id, answers, None, error=_why(exc))
        n_chunks, context_tokens = len(doc.chunks), doc.context_tokens
        why = cut_refusal(context_tokens, self.chunk_tokens, self.max_chunks)
        if why:
            return record(
                sample_id,
                answers,
                None,
                n_chunks=-(-context_tokens // self.chunk_tokens),
                context_tokens=context_tokens,
                error=why,
            )
        error = "no attempt made"
        for attempt in range(1 + self.max_retries):
            try:
                ep = await self.run_episode(engine, doc, keep_turns=False)
            except Exception as exc:
                error = _why(exc)
                logger.warning(
                    f"sample {sample_id}: attempt {attempt + 1}/"
                    f"{1 + self.max_retries} failed: {error}"
                )
                continue
            return record(
                sample_id,
                answers,
                ep.answer,
                n_chunks=n_chunks,
                context_tokens=context_tokens,
                output_tokens=ep.output_tokens,
                latency_s=time.perf_counter() - start,
            )
        return record(
            sample_id,
            answers,
            None,
            n_chunks=n_chunks,
            context_tokens=context_tokens,
            latency_s=time.perf_counter() - start,
            error=f"failed after {1 + self.max_retries} attempts; last: {error}",
        )

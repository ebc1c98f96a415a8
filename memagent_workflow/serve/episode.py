"""One request's episode: ``ask.py``'s workflow (`AskWorkflow`, the eval's
episode loop: chunking, prompts, memory turns, answer protocol) run in the
service's event loop, its turns reported as they finish.

Every request gets a shallow copy of the one workflow built at start, with its
own ``on_turn`` and sampling; the tokenizer, prompts and settings are shared.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from memagent_workflow.eval.ask import AskWorkflow
from memagent_workflow.eval.workflow import FAILED
from memagent_workflow.serve.engine import TurnCounter, engine_failure
from memagent_workflow.serve.shapes import ServeError


@dataclass
class EpisodeResult:
    """What a finished episode gives a reply."""

    answer: str
    extracted: str | None
    finish_reason: str  # stop | length (the final turn's)
    trace: dict[str, Any]  # the eval's trace record (trace.py)
    turns: int  # model calls: one per chunk, then the answer
    prompt_tokens: int
    completion_tokens: int
    seconds: float

    def memagent(self, with_trace: bool) -> dict[str, Any]:
        """The reply's ``memagent`` extension field."""
        out = {
            "final_memory": self.trace["final_memory"],
            "extracted": self.extracted,
            "chunks": self.trace["n_chunks"],
            "document_tokens": self.trace["context_tokens"],
            "turns": self.turns,
            "seconds": round(self.seconds, 4),
        }
        if with_trace:
            out["trace"] = self.trace
        return out


class EpisodeRunner:
    """Runs episodes of one workflow against one engine."""

    def __init__(
        self,
        workflow: AskWorkflow,
        engine: Any,
        call_timeout_s: float = 0,
        health: Any = None,
    ):
        self.workflow = workflow
        self.engine = engine
        self.call_timeout_s = call_timeout_s
        self.health = health

    def check_answer_budget(self, max_tokens: int | None, param: str) -> None:
        """400 for a ``max_tokens`` above the final turn's room
        (``memagent.max_final_tokens``, which the prompts were sized for)."""
        room = self.workflow.final_gconfig.max_new_tokens
        if max_tokens is not None and max_tokens > room:
            raise ServeError(
                400,
                f"{param}={max_tokens} is more than the final answer's room: "
                f"memagent.max_final_tokens={room}",
                code="invalid_value",
                param=param,
            )

    def workflow_for(
        self,
        sampling: dict[str, Any],
        on_turn: Callable[[int, int], None] | None,
        max_tokens: int | None = None,
    ) -> AskWorkflow:
        """The workflow for one request: its sampling, its turn callback, its
        answer's budget."""
        wf = copy.copy(self.workflow)
        wf.on_turn = on_turn
        if sampling:
            wf.memory_gconfig = wf.memory_gconfig.new(**sampling)
            wf.final_gconfig = wf.final_gconfig.new(**sampling)
        if max_tokens is not None:
            wf.final_gconfig = wf.final_gconfig.new(max_new_tokens=max_tokens)
        return wf

    async def run(
        self,
        rid: str,
        question: str,
        ids: np.ndarray,
        sampling: dict[str, Any],
        on_turn: Callable[[int, int], None] | None = None,
        max_tokens: int | None = None,
    ) -> EpisodeResult:
        """The episode; a failed one raises `ServeError` (5xx: the engine's
        cause; 400: a document the workflow refused)."""
        start = time.perf_counter()
        wf = self.workflow_for(sampling, on_turn, max_tokens)
        engine = TurnCounter(self.engine, self.call_timeout_s, self.health)
        data = {"id": rid, "question": question, "answers": [], "context_ids": ids}
        rec = await wf.arun_episode(engine, data)
        error = rec.get("error")
        if error and engine.error is not None:
            raise engine_failure(engine.error, error)
        if error and error.startswith(FAILED):  # not the engine's: a fault here
            raise ServeError(500, error, code="episode_failed")
        if error:  # the sample was refused before any model call
            raise ServeError(400, error, code="refused", param="messages")
        return EpisodeResult(
            answer=rec["prediction"] or "",
            extracted=(rec.get("extracted") or "").strip() or None,
            finish_reason="length" if engine.stop_reason == "length" else "stop",
            trace=rec["trace"],
            turns=engine.turns,
            prompt_tokens=engine.prompt_tokens,
            completion_tokens=engine.completion_tokens,
            seconds=time.perf_counter() - start,
        )

"""Baselines on the same eval sets, scored the same way: the whole context in
one turn (``full_context``), or the question alone (``no_context``).

``full_context`` puts the context into one prompt, as the paper's long-context
baselines do; a context that does not fit the model's window
(``gconfig.max_tokens``, SGLang's context length: prompt + answer tokens must
stay below it) is cut in the middle, keeping its first and last halves, and the
tokens cut are recorded per sample (``cut_tokens``). Unlike the original's
baseline script, which cut the whole prompt, only the context is cut, so the
instruction and question always survive. ``no_context`` asks the question with
no document: the control the original used to pick RULER-HQA's questions.
Both answer as ``memagent.answer_protocol`` asks (``\\boxed{}``, or after "the
answer is") and are scored like MemAgent's final turn.
"""

from __future__ import annotations

import time
import uuid
from functools import partial
from typing import Any

import numpy as np
from areal.api import InferenceEngine
from areal.utils import logging

from memagent_workflow.context import aencode_context
from memagent_workflow.episode import Episode, parse_item
from memagent_workflow.eval.results import make_record
from memagent_workflow.eval.workflow import MemAgentEvalWorkflow, _id_and_answers, _why
from memagent_workflow.prompts import CHUNK_SLOT, render_chat

logger = logging.getLogger("MemAgentEval")

# How each answer protocol (memagent.answer_protocol) asks for the answer; the
# same wording as the built-in final prompts (prompts.py).
_ASK = {
    "boxed": "You may reason briefly first; put the final answer, and nothing "
    "else, inside \\boxed{{}}, e.g. \\boxed{{Paris}}.",
    "answer_is": "You may reason briefly first; end your response with "
    '"Therefore, the answer is (your answer)".',
}

FULL_CONTEXT_PROMPT = """\
Read the document below, then answer the question that follows it. {ask}

<document>
{{context}}
</document>

<question>
{{question}}
</question>

Answer:"""

NO_CONTEXT_PROMPT = """\
Answer the question below. {ask}

<question>
{{question}}
</question>

Answer:"""

#: The baselines' prompt templates per answer protocol, keyed like ``_ASK``.
FULL_CONTEXT_PROMPTS = {p: FULL_CONTEXT_PROMPT.format(ask=a) for p, a in _ASK.items()}
NO_CONTEXT_PROMPTS = {p: NO_CONTEXT_PROMPT.format(ask=a) for p, a in _ASK.items()}

WORKFLOWS = {
    "memagent": "memagent_workflow.eval.workflow.MemAgentEvalWorkflow",
    "full_context": "memagent_workflow.eval.baseline.BaselineEvalWorkflow",
    "no_context": "memagent_workflow.eval.baseline.BaselineEvalWorkflow",
}


def workflow_for(mode: str) -> tuple[type, str]:
    """The eval workflow class of ``mode`` and its import path."""
    cls = MemAgentEvalWorkflow if mode == "memagent" else BaselineEvalWorkflow
    return cls, WORKFLOWS[mode]


def centre_cut(ids: np.ndarray, keep: int) -> tuple[np.ndarray, int]:
    """The first and last halves of ``ids`` that total ``keep`` tokens, and the
    number of tokens cut (0 if everything fits)."""
    if len(ids) <= keep:
        return ids, 0
    head = (keep + 1) // 2
    tail = keep - head
    kept = np.concatenate([ids[:head], ids[len(ids) - tail :] if tail else ids[:0]])
    return kept, len(ids) - keep


class BaselineEvalWorkflow(MemAgentEvalWorkflow):
    """One turn per sample: the whole (centre-cut) context, or none of it."""

    def __init__(self, *args: Any, mode: str = "full_context", **kwargs: Any):
        super().__init__(*args, **kwargs)
        if mode not in ("full_context", "no_context"):
            raise ValueError(
                f"baseline mode must be full_context or no_context, got {mode!r}"
            )
        self.mode = mode
        self.window = (
            self.final_gconfig.max_tokens - self.final_gconfig.max_new_tokens - 1
        )

    def _encode(self, text: str) -> np.ndarray:
        ids = self.tokenizer.encode(text, add_special_tokens=False) if text else []
        return np.asarray(ids, dtype=np.int32)

    async def build_prompt(
        self, question: str, context: str
    ) -> tuple[np.ndarray, int, int]:
        """Prompt ids, the context's tokens and the tokens cut from it."""
        if self.mode == "no_context":
            text = render_chat(
                self.tokenizer,
                NO_CONTEXT_PROMPTS[self.answer_protocol].format(question=question),
            )
            return self._encode(text), 0, 0
        text = render_chat(
            self.tokenizer,
            FULL_CONTEXT_PROMPTS[self.answer_protocol].format(
                question=question, context=CHUNK_SLOT
            ),
        )
        before, after = text.split(CHUNK_SLOT)
        before_ids, after_ids = self._encode(before), self._encode(after)
        ids = await aencode_context(self.tokenizer, context)
        keep = self.window - len(before_ids) - len(after_ids)
        if keep < 0:
            raise ValueError(
                f"the question and instruction alone ({len(before_ids) + len(after_ids)} "
                f"tokens) exceed the window of {self.window} prompt tokens"
            )
        kept, cut = centre_cut(ids, keep)
        return np.concatenate([before_ids, kept, after_ids]), len(ids), cut

    async def arun_episode(
        self, engine: InferenceEngine, data: dict[str, Any]
    ) -> dict[str, Any]:
        sample_id, answers, repeat = _id_and_answers(data)
        record = partial(self._record, repeat=repeat)
        start = time.perf_counter()
        context_tokens = cut = None
        try:
            _, question, context, answers = parse_item(data)
            prompt, context_tokens, cut = await self.build_prompt(question, context)
        except Exception as exc:  # malformed sample or no room: retrying will not help
            return record(
                sample_id, answers, None, context_tokens, cut, error=_why(exc)
            )
        error = "no attempt made"
        for attempt in range(1 + self.max_retries):
            ep = Episode()
            try:
                turn = await self.generate(
                    engine, uuid.uuid4().hex, prompt, self.final_gconfig, ep
                )
            except Exception as exc:
                error = _why(exc)
                logger.warning(
                    f"sample {sample_id}: attempt {attempt + 1}/"
                    f"{1 + self.max_retries} failed: {error}"
                )
                continue
            answer = self.tokenizer.decode(
                self.strip_stop(turn.output_ids), skip_special_tokens=True
            )
            return record(
                sample_id,
                answers,
                answer,
                context_tokens,
                cut,
                output_tokens=len(turn.output_ids),
                latency_s=time.perf_counter() - start,
            )
        return record(
            sample_id,
            answers,
            None,
            context_tokens,
            cut,
            latency_s=time.perf_counter() - start,
            error=f"failed after {1 + self.max_retries} attempts; last: {error}",
        )

    def _record(
        self, sample_id, answers, prediction, context_tokens, cut, **kw
    ) -> dict[str, Any]:
        n_chunks = 0 if self.mode == "no_context" else 1
        rec = make_record(
            sample_id,
            answers,
            prediction,
            protocol=self.answer_protocol,
            n_chunks=n_chunks,
            context_tokens=context_tokens,
            **kw,
        )
        return {**rec, "mode": self.mode, "cut_tokens": cut}

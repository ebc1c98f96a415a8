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

import uuid
from typing import Any

import numpy as np
from areal.api import InferenceEngine

from memagent_workflow.chunking import centre_truncate
from memagent_workflow.context import aencode_context, prompt_room
from memagent_workflow.episode import Episode, parse_item
from memagent_workflow.eval.workflow import EvalSample, MemAgentEvalWorkflow
from memagent_workflow.prompts.tokens import CHUNK_SLOT, encode_text, render_chat
from memagent_workflow.prompts.wording import ANSWER_ASKS

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

#: The baselines' prompt templates per answer protocol, asking for the answer
#: as the built-in final prompts do (``prompts.wording.ANSWER_ASKS``).
FULL_CONTEXT_PROMPTS = {
    p: FULL_CONTEXT_PROMPT.format(ask=a) for p, a in ANSWER_ASKS.items()
}
NO_CONTEXT_PROMPTS = {
    p: NO_CONTEXT_PROMPT.format(ask=a) for p, a in ANSWER_ASKS.items()
}

WORKFLOWS = {
    "memagent": "memagent_workflow.eval.workflow.MemAgentEvalWorkflow",
    "full_context": "memagent_workflow.eval.baseline.BaselineEvalWorkflow",
    "no_context": "memagent_workflow.eval.baseline.BaselineEvalWorkflow",
}


def workflow_for(mode: str) -> tuple[type, str]:
    """The eval workflow class of ``mode`` and its import path."""
    cls = MemAgentEvalWorkflow if mode == "memagent" else BaselineEvalWorkflow
    return cls, WORKFLOWS[mode]


class BaselineEvalWorkflow(MemAgentEvalWorkflow):
    """One turn per sample: the whole (centre-cut) context, or none of it; the
    sample loop and its records are ``MemAgentEvalWorkflow``'s."""

    def __init__(self, *args: Any, mode: str = "full_context", **kwargs: Any):
        super().__init__(*args, **kwargs)
        if mode not in ("full_context", "no_context"):
            raise ValueError(
                f"baseline mode must be full_context or no_context, got {mode!r}"
            )
        self.mode = mode
        self.window = prompt_room(
            self.final_gconfig.max_new_tokens, self.final_gconfig.max_tokens
        )

    async def build_prompt(
        self, question: str, context: str
    ) -> tuple[np.ndarray, int, int]:
        """Prompt ids, the context's tokens and the tokens cut from it."""
        if self.mode == "no_context":
            text = render_chat(
                self.tokenizer,
                NO_CONTEXT_PROMPTS[self.answer_protocol].format(question=question),
            )
            return encode_text(self.tokenizer, text), 0, 0
        text = render_chat(
            self.tokenizer,
            FULL_CONTEXT_PROMPTS[self.answer_protocol].format(
                question=question, context=CHUNK_SLOT
            ),
        )
        before, after = text.split(CHUNK_SLOT)
        before_ids = encode_text(self.tokenizer, before)
        after_ids = encode_text(self.tokenizer, after)
        ids = await aencode_context(self.tokenizer, context)
        keep = self.window - len(before_ids) - len(after_ids)
        if keep < 0:
            raise ValueError(
                f"the question and instruction alone ({len(before_ids) + len(after_ids)} "
                f"tokens) exceed the window of {self.window} prompt tokens"
            )
        kept, cut = centre_truncate(ids, keep)
        return np.concatenate([before_ids, kept, after_ids]), len(ids), cut

    async def prepare(self, sample: EvalSample, data: dict[str, Any]) -> np.ndarray:
        """The prompt; the context's size and cut go to the sample's record."""
        sample.fields.update(n_chunks=0 if self.mode == "no_context" else 1)
        sample.extra.update(mode=self.mode, cut_tokens=None)
        _, question, context, sample.answers = parse_item(data)
        prompt, context_tokens, cut = await self.build_prompt(question, context)
        sample.fields["context_tokens"] = context_tokens
        sample.extra["cut_tokens"] = cut
        return prompt

    async def answer(
        self, engine: InferenceEngine, work: np.ndarray
    ) -> tuple[str, int]:
        """One attempt: the answer to the one prompt, and its tokens."""
        turn = await self.generate(
            engine, uuid.uuid4().hex, work, self.final_gconfig, Episode()
        )
        text = self.tokenizer.decode(
            self.strip_stop(turn.output_ids), skip_special_tokens=True
        )
        return text, len(turn.output_ids)

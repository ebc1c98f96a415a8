"""Prompts rebuilt from text every turn, as the original's evaluation script sent them.

The original MemAgent's evaluation (``taskutils/memory_eval/utils/recurrent.py``)
formats each turn's message as text — the question stripped, the chunk decoded
from its token slice, the memory as the previous answer's text (after its last
``</think>``, if any) — and its server applies the chat template and encodes the
message whole. Here the same: ``memagent.prompt_build=text`` (the paper preset
sets it). Text pieces then merge at their boundaries as the server's encoding
merges them (a question ending in "?" before a newline is one token with it),
unlike the token pieces of ``prompts.py``, which follow the original's training.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from memagent_workflow.prompts import CHUNK_SLOT, MEMORY_SLOT, render_chat, split_once
from memagent_workflow.reward import after_think


@dataclass(frozen=True)
class TextPromptTemplate:
    """A rendered chat cut at its memory (and chunk) slot; encoded whole per turn."""

    tokenizer: Any
    before_memory: str
    after_memory: str
    after_chunk: str | None = None

    def build(self, memory_ids, chunk_ids=None) -> np.ndarray:
        """Prompt ids for the given memory (and chunk, for memory turns)."""
        memory = after_think(
            self.tokenizer.decode(memory_ids, skip_special_tokens=True)
        )
        text = self.before_memory + memory + self.after_memory
        if self.after_chunk is not None:
            if chunk_ids is None:
                raise ValueError("a memory-update prompt needs a chunk")
            text += self.tokenizer.decode(chunk_ids) + self.after_chunk
        elif chunk_ids is not None:
            raise ValueError("the final-answer prompt takes no chunk")
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        return np.asarray(ids, dtype=np.int32)

    @property
    def overhead(self) -> int:
        """Prompt tokens besides the memory and the chunk (encoded without them)."""
        text = self.before_memory + self.after_memory + (self.after_chunk or "")
        return len(self.tokenizer.encode(text, add_special_tokens=False))


def text_template(
    tokenizer, question: str, template: str, with_chunk: bool
) -> TextPromptTemplate:
    """The chat text of ``template`` for ``question`` (stripped, as the original's
    evaluation reads it), cut at the memory and chunk slots."""
    slots = {"question": question.strip(), "memory": MEMORY_SLOT}
    if with_chunk:
        slots["chunk"] = CHUNK_SLOT
    text = render_chat(tokenizer, template.format(**slots))
    before, rest = split_once(text, MEMORY_SLOT)
    if not with_chunk:
        return TextPromptTemplate(tokenizer, before, rest)
    middle, after = split_once(rest, CHUNK_SLOT)
    return TextPromptTemplate(tokenizer, before, middle, after)

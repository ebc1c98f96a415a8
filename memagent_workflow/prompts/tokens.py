"""A prompt as token ids: a template's text around its memory and chunk slots.

Each prompt is rendered once per question through the tokenizer's chat
template with markers in the question, memory and chunk slots, then split at
them; every text piece between two slots is encoded on its own, and so is the
question. This is the original MemAgent's token template (``TokenTemplate`` in
its ``recurrent/utils.py``): the question never merges with the text around it
(a "?" before a newline stays its own token), so a prompts file holding the
original's templates gives its training prompts token for token. A turn's
prompt is the concatenation of these fixed pieces with the memory ids (exactly
the tokens the model generated last turn) and the chunk ids (a slice of the
tokenised document): token in, token out, no decode/re-encode drift.

The wording itself is ``wording.py``'s (built in) or a user's file's
(``prompts/__init__.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from memagent_workflow.reward import after_think

QUESTION_SLOT = "\u2063MEMAGENT_QUESTION_SLOT\u2063"
MEMORY_SLOT = "\u2063MEMAGENT_MEMORY_SLOT\u2063"
CHUNK_SLOT = "\u2063MEMAGENT_CHUNK_SLOT\u2063"


def render_chat(tokenizer, user_text: str) -> str:
    """One user message through the chat template, thinking disabled if supported."""
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": user_text}],
        tokenize=False,
        add_generation_prompt=True,
        enable_thinking=False,
    )


def encode_text(tokenizer, text: str) -> np.ndarray:
    """``text``'s ids as int32, no special tokens added ("" gives none)."""
    ids = tokenizer.encode(text, add_special_tokens=False) if text else []
    return np.asarray(ids, dtype=np.int32)


@dataclass(frozen=True)
class PromptTemplate:
    """Token pieces (int32 arrays) of a prompt around its memory and chunk slots."""

    before_memory: np.ndarray
    after_memory: np.ndarray
    after_chunk: np.ndarray | None = None

    def build(self, memory_ids, chunk_ids=None) -> np.ndarray:
        """Prompt ids for the given memory (and chunk, for memory turns).

        Arrays in, one array out: a 5000-token turn costs one concatenation,
        not a Python loop over its tokens.
        """
        parts = [
            self.before_memory,
            np.asarray(memory_ids, dtype=np.int32),
            self.after_memory,
        ]
        if self.after_chunk is not None:
            if chunk_ids is None:
                raise ValueError("a memory-update prompt needs a chunk")
            parts += [np.asarray(chunk_ids, dtype=np.int32), self.after_chunk]
        elif chunk_ids is not None:
            raise ValueError("the final-answer prompt takes no chunk")
        return np.concatenate(parts)

    @property
    def overhead(self) -> int:
        """Prompt tokens besides the memory and the chunk."""
        return (
            len(self.before_memory)
            + len(self.after_memory)
            + (0 if self.after_chunk is None else len(self.after_chunk))
        )


def split_once(text: str, slot: str) -> tuple[str, str]:
    parts = text.split(slot)
    if len(parts) != 2:
        raise ValueError(
            f"chat template must keep the slot {slot!r} exactly once, "
            f"found {len(parts) - 1} (is the memory slot after the chunk slot?)"
        )
    return parts[0], parts[1]


def _pieces(tokenizer, text: str, question_ids: np.ndarray) -> np.ndarray:
    """``text`` encoded piece by piece around its question slots, the question's
    own ids in each slot (the original never encodes them together)."""
    parts: list[np.ndarray] = []
    for k, piece in enumerate(text.split(QUESTION_SLOT)):
        if k:
            parts.append(question_ids)
        parts.append(encode_text(tokenizer, piece))
    return np.concatenate(parts)


def token_template(
    tokenizer, question: str, template: str, with_chunk: bool
) -> PromptTemplate:
    """The token pieces of ``template`` for ``question``: a memory turn's
    (``with_chunk``: instruction, question, memory, section) or the final turn's
    (instruction, question, memory)."""
    slots = {"question": QUESTION_SLOT, "memory": MEMORY_SLOT}
    if with_chunk:
        slots["chunk"] = CHUNK_SLOT
    text = render_chat(tokenizer, template.format(**slots))
    q = encode_text(tokenizer, question)
    if with_chunk and chunk_first(text):
        before, rest = split_once(text, CHUNK_SLOT)
        texts = [before, *split_once(rest, MEMORY_SLOT)]
        return ChunkFirstTemplate(*(_pieces(tokenizer, t, q) for t in texts))
    before, rest = split_once(text, MEMORY_SLOT)
    texts = [before, *split_once(rest, CHUNK_SLOT)] if with_chunk else [before, rest]
    return PromptTemplate(*(_pieces(tokenizer, t, q) for t in texts))


def chunk_first(text: str) -> bool:
    """Whether a rendered memory-update prompt has the section before the memory."""
    return CHUNK_SLOT in text and text.index(CHUNK_SLOT) < text.index(MEMORY_SLOT)


@dataclass(frozen=True)
class ChunkFirstTemplate:
    """Token pieces of a memory-update prompt with the section before the memory
    (``prompts/section_first.yaml``): a group's rows of one turn then share
    everything up to the memory (AReaL's tree training computes it once)."""

    before_chunk: np.ndarray
    after_chunk: np.ndarray
    after_memory: np.ndarray

    def build(self, memory_ids, chunk_ids=None) -> np.ndarray:
        """Prompt ids for the given memory and chunk."""
        if chunk_ids is None:
            raise ValueError("a memory-update prompt needs a chunk")
        return np.concatenate(
            [
                self.before_chunk,
                np.asarray(chunk_ids, dtype=np.int32),
                self.after_chunk,
                np.asarray(memory_ids, dtype=np.int32),
                self.after_memory,
            ]
        )

    @property
    def overhead(self) -> int:
        """Prompt tokens besides the memory and the chunk."""
        return len(self.before_chunk) + len(self.after_chunk) + len(self.after_memory)


# ------------------------------------------------- prompts rebuilt from text
# The original's evaluation script (taskutils/memory_eval/utils/recurrent.py)
# formats each turn's message as text -- the question stripped, the chunk
# decoded from its token slice, the memory as the previous answer's text (after
# its last </think>) -- and its server encodes the chat whole, so text merges
# across those boundaries (a question ending in "?" before a newline is one
# token with it). memagent.prompt_build=text does the same (the paper preset).


@dataclass(frozen=True)
class TextPromptTemplate:
    """A rendered chat cut at its memory (and chunk) slot; encoded whole per turn.
    With ``chunk_first`` the three texts surround the chunk, then the memory."""

    tokenizer: Any
    before_memory: str
    after_memory: str
    after_chunk: str | None = None
    chunk_first: bool = False

    def build(self, memory_ids, chunk_ids=None) -> np.ndarray:
        """Prompt ids for the given memory (and chunk, for memory turns)."""
        memory = after_think(
            self.tokenizer.decode(memory_ids, skip_special_tokens=True)
        )
        if self.chunk_first:
            if chunk_ids is None:
                raise ValueError("a memory-update prompt needs a chunk")
            text = self.before_memory + self.tokenizer.decode(chunk_ids)
            text += self.after_memory + memory + (self.after_chunk or "")
            ids = self.tokenizer.encode(text, add_special_tokens=False)
            return np.asarray(ids, dtype=np.int32)
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
    if with_chunk and chunk_first(text):
        before, rest = split_once(text, CHUNK_SLOT)
        middle, after = split_once(rest, MEMORY_SLOT)
        return TextPromptTemplate(tokenizer, before, middle, after, chunk_first=True)
    before, rest = split_once(text, MEMORY_SLOT)
    if not with_chunk:
        return TextPromptTemplate(tokenizer, before, rest)
    middle, after = split_once(rest, CHUNK_SLOT)
    return TextPromptTemplate(tokenizer, before, middle, after)

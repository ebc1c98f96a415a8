"""The two MemAgent prompts: their texts and their token templates.

The texts are ``str.format`` templates: the memory-update prompt has the slots
``{question}``, ``{memory}`` and ``{chunk}``, the final-answer prompt
``{question}`` and ``{memory}`` (literal braces are written ``{{ }}``). The
built-in wording is below; ``prompt_file.py`` reads a user's (``memagent.prompts``).

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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from memagent_workflow.reward import after_think

QUESTION_SLOT = "\u2063MEMAGENT_QUESTION_SLOT\u2063"
MEMORY_SLOT = "\u2063MEMAGENT_MEMORY_SLOT\u2063"
CHUNK_SLOT = "\u2063MEMAGENT_CHUNK_SLOT\u2063"

MEMORY_UPDATE_PROMPT = """\
You are reading a long document one section at a time and can keep only a \
short memory between sections. Below are a question, your memory of the \
sections read so far, and the next section. Write the new memory: keep every \
fact from the old memory and from the section that may help answer the \
question, and drop the rest. Write only the new memory.

<question>
{question}
</question>

<memory>
{memory}
</memory>

<section>
{chunk}
</section>

New memory:"""

FINAL_ANSWER_PROMPT = """\
You have read a long document section by section and kept notes in a memory. \
Answer the question using only this memory. You may reason briefly first; \
put the final answer, and nothing else, inside \\boxed{{}}, e.g. \\boxed{{Paris}}.

<question>
{question}
</question>

<memory>
{memory}
</memory>

Answer:"""

# The final prompt for ``memagent.answer_protocol=answer_is``: the answer ends
# the response after "the answer is" (case-sensitive, as the original reads it).
FINAL_ANSWER_IS_PROMPT = """\
You have read a long document section by section and kept notes in a memory. \
Answer the question using only this memory. You may reason briefly first; end \
your response with "Therefore, the answer is (your answer)".

<question>
{question}
</question>

<memory>
{memory}
</memory>

Answer:"""

FINAL_PROMPTS = {"boxed": FINAL_ANSWER_PROMPT, "answer_is": FINAL_ANSWER_IS_PROMPT}


@dataclass(frozen=True)
class PromptTexts:
    """The memory-update and final-answer templates, and where they came from."""

    memory_update: str = MEMORY_UPDATE_PROMPT
    final_answer: str = FINAL_ANSWER_PROMPT
    source: str = "built-in"

    def memory_template(self, tokenizer, question: str, build: str = "tokens"):
        """The memory-turn prompt for ``question``: token pieces (``tokens``, the
        original's training) or text encoded whole each turn (``text``, the
        original's evaluation script; ``TextPromptTemplate``)."""
        if _text(build):
            return text_template(tokenizer, question, self.memory_update, True)
        return memory_update_template(tokenizer, question, self.memory_update)

    def final_template(self, tokenizer, question: str, build: str = "tokens"):
        """The final-turn prompt for ``question`` (``build`` as above)."""
        if _text(build):
            return text_template(tokenizer, question, self.final_answer, False)
        return final_answer_template(tokenizer, question, self.final_answer)


def _text(build: str) -> bool:
    if build not in ("tokens", "text"):
        raise ValueError(f"memagent.prompt_build={build!r}: choose tokens or text")
    return build == "text"


def builtin_prompts(protocol: str = "boxed") -> PromptTexts:
    """The built-in wording; its final prompt asks for ``protocol``'s form."""
    if protocol not in FINAL_PROMPTS:
        raise ValueError(
            f"memagent.answer_protocol={protocol!r}: choose one of {list(FINAL_PROMPTS)}"
        )
    return PromptTexts(final_answer=FINAL_PROMPTS[protocol])


def render_chat(tokenizer, user_text: str) -> str:
    """One user message through the chat template, thinking disabled if supported."""
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": user_text}],
        tokenize=False,
        add_generation_prompt=True,
        enable_thinking=False,
    )


def _encode(tokenizer, text: str) -> np.ndarray:
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
        parts.append(_encode(tokenizer, piece))
    return np.concatenate(parts)


def memory_update_template(
    tokenizer, question: str, template: str = MEMORY_UPDATE_PROMPT
) -> PromptTemplate:
    """Template of a memory turn: instruction, question, memory, section."""
    text = render_chat(
        tokenizer,
        template.format(question=QUESTION_SLOT, memory=MEMORY_SLOT, chunk=CHUNK_SLOT),
    )
    q = _encode(tokenizer, question)
    before, rest = split_once(text, MEMORY_SLOT)
    middle, after = split_once(rest, CHUNK_SLOT)
    return PromptTemplate(
        before_memory=_pieces(tokenizer, before, q),
        after_memory=_pieces(tokenizer, middle, q),
        after_chunk=_pieces(tokenizer, after, q),
    )


def final_answer_template(
    tokenizer, question: str, template: str = FINAL_ANSWER_PROMPT
) -> PromptTemplate:
    """Template of the final turn: instruction, question, memory; no chunk."""
    text = render_chat(
        tokenizer, template.format(question=QUESTION_SLOT, memory=MEMORY_SLOT)
    )
    q = _encode(tokenizer, question)
    before, after = split_once(text, MEMORY_SLOT)
    return PromptTemplate(
        before_memory=_pieces(tokenizer, before, q),
        after_memory=_pieces(tokenizer, after, q),
    )


# ------------------------------------------------- prompts rebuilt from text
# The original's evaluation script (taskutils/memory_eval/utils/recurrent.py)
# formats each turn's message as text -- the question stripped, the chunk
# decoded from its token slice, the memory as the previous answer's text (after
# its last </think>) -- and its server encodes the chat whole, so text merges
# across those boundaries (a question ending in "?" before a newline is one
# token with it). memagent.prompt_build=text does the same (the paper preset).


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

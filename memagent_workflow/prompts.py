"""The two MemAgent prompts: their texts (built in, or from a file) and token templates.

The texts are ``str.format`` templates: the memory-update prompt has the slots
``{question}``, ``{memory}`` and ``{chunk}``, the final-answer prompt
``{question}`` and ``{memory}`` (literal braces are written ``{{ }}``).
``memagent.prompts`` may name a YAML or JSON file with the keys
``memory_update`` and ``final_answer`` to replace the built-in wording, e.g.
with the templates a released checkpoint was trained with.

Each prompt is rendered once per question through the tokenizer's chat
template with markers in the memory and chunk slots, then split at them. A
turn's prompt is the concatenation of fixed token pieces with the memory ids
(exactly the tokens the model generated last turn) and the chunk ids (a slice
of the tokenised document): token in, token out, no decode/re-encode drift.
"""

from __future__ import annotations

import json
import os
import string
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

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


SLOTS = {
    "memory_update": ("question", "memory", "chunk"),
    "final_answer": ("question", "memory"),
}
_ONCE = ("memory", "chunk")  # the template is split there: exactly one each


class PromptFileError(ValueError):
    """A prompts file that cannot be used, with the file and template named."""


@dataclass(frozen=True)
class PromptTexts:
    """The memory-update and final-answer templates, and where they came from."""

    memory_update: str = MEMORY_UPDATE_PROMPT
    final_answer: str = FINAL_ANSWER_PROMPT
    source: str = "built-in"

    def memory_template(self, tokenizer, question: str) -> PromptTemplate:
        return memory_update_template(tokenizer, question, self.memory_update)

    def final_template(self, tokenizer, question: str) -> PromptTemplate:
        return final_answer_template(tokenizer, question, self.final_answer)


def check_slots(name: str, text: str, where: str = "built-in prompts") -> None:
    """Refuse a template whose slots are not exactly ``SLOTS[name]``."""

    def bad(why: str) -> PromptFileError:
        return PromptFileError(f"{where}: template '{name}': {why}")

    if not isinstance(text, str) or not text.strip():
        raise bad("must be a non-empty string")
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise bad(f"{exc}; write literal braces as {{{{ and }}}}") from None
    counts: dict[str, int] = {}
    for _, field_name, spec, conversion in fields:
        if field_name is None:
            continue
        if field_name not in SLOTS[name]:
            raise bad(
                f"unknown slot {{{field_name}}}; allowed: "
                + ", ".join(f"{{{s}}}" for s in SLOTS[name])
                + " (literal braces are written {{ and }})"
            )
        if spec or conversion:
            raise bad(f"slot {{{field_name}}} must be plain, without '!' or ':'")
        counts[field_name] = counts.get(field_name, 0) + 1
    missing = [s for s in SLOTS[name] if s not in counts]
    if missing:
        raise bad("missing slot(s) " + ", ".join(f"{{{s}}}" for s in missing))
    for slot in _ONCE:
        if counts.get(slot, 1) > 1:
            raise bad(f"slot {{{slot}}} appears {counts[slot]} times; use it once")


def load_prompts(path: str | os.PathLike | None) -> PromptTexts:
    """The templates of a YAML or JSON file (None: the built-in ones), checked."""
    if path is None or str(path) == "":
        return PromptTexts()
    path = Path(path)
    where = f"prompts file {path}"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PromptFileError(f"{where}: cannot read it: {exc}") from None
    kind = "JSON" if path.suffix == ".json" else "YAML"
    try:
        data = json.loads(text) if kind == "JSON" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise PromptFileError(f"{where}: not valid {kind}: {exc}") from None
    if not isinstance(data, dict):
        raise PromptFileError(
            f"{where}: expected a mapping with keys {sorted(SLOTS)}, "
            f"got {type(data).__name__}"
        )
    unknown = sorted(set(data) - set(SLOTS))
    missing = sorted(set(SLOTS) - set(data))
    if unknown or missing:
        raise PromptFileError(
            f"{where}: expected exactly the keys {sorted(SLOTS)}"
            + (f"; missing {missing}" if missing else "")
            + (f"; unknown {unknown}" if unknown else "")
        )
    for name in SLOTS:
        check_slots(name, data[name], where)
    return PromptTexts(data["memory_update"], data["final_answer"], str(path))


def check_fit(
    tokenizer,
    prompts: PromptTexts,
    *,
    chunk_tokens: int,
    max_memory_tokens: int,
    max_final_tokens: int,
    max_tokens: int,
    initial_memory_tokens: int = 0,
) -> None:
    """Refuse templates that cannot hold a full chunk within ``max_tokens``.

    Counts the template's own tokens with an empty question; the question's
    tokens come on top at run time (a turn that then does not fit is refused).
    """
    memory = max(max_memory_tokens, initial_memory_tokens)
    turns = [
        (
            "memory_update",
            prompts.memory_template(tokenizer, "").overhead,
            f"memory {memory} + chunk {chunk_tokens} + new tokens {max_memory_tokens}",
            memory + chunk_tokens + max_memory_tokens,
        ),
        (
            "final_answer",
            prompts.final_template(tokenizer, "").overhead,
            f"memory {memory} + new tokens {max_final_tokens}",
            memory + max_final_tokens,
        ),
    ]
    for name, overhead, parts, need in turns:
        if overhead + need > max_tokens:
            raise PromptFileError(
                f"{prompts.source}: template '{name}' takes {overhead} tokens with "
                f"the chat template and an empty question; with {parts} a turn "
                f"needs {overhead + need} > gconfig.max_tokens={max_tokens}. Shorten "
                "the template, lower memagent.chunk_tokens, or raise "
                "gconfig.max_tokens (and the server's context length)."
            )


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


def _split_once(text: str, slot: str) -> tuple[str, str]:
    parts = text.split(slot)
    if len(parts) != 2:
        raise ValueError(
            f"chat template must keep the slot {slot!r} exactly once, "
            f"found {len(parts) - 1} (does the question contain it?)"
        )
    return parts[0], parts[1]


def memory_update_template(
    tokenizer, question: str, template: str = MEMORY_UPDATE_PROMPT
) -> PromptTemplate:
    """Template of a memory turn: instruction, question, memory, section."""
    text = render_chat(
        tokenizer,
        template.format(question=question, memory=MEMORY_SLOT, chunk=CHUNK_SLOT),
    )
    before, rest = _split_once(text, MEMORY_SLOT)
    middle, after = _split_once(rest, CHUNK_SLOT)
    return PromptTemplate(
        before_memory=_encode(tokenizer, before),
        after_memory=_encode(tokenizer, middle),
        after_chunk=_encode(tokenizer, after),
    )


def final_answer_template(
    tokenizer, question: str, template: str = FINAL_ANSWER_PROMPT
) -> PromptTemplate:
    """Template of the final turn: instruction, question, memory; no chunk."""
    text = render_chat(
        tokenizer, template.format(question=question, memory=MEMORY_SLOT)
    )
    before, after = _split_once(text, MEMORY_SLOT)
    return PromptTemplate(
        before_memory=_encode(tokenizer, before),
        after_memory=_encode(tokenizer, after),
    )

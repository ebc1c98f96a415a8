"""Prompt files (``memagent.prompts``): a user's templates, read and checked.

A prompts file is YAML or JSON with exactly two keys, ``memory_update`` (slots
``{question}``, ``{memory}``, ``{chunk}``) and ``final_answer`` (``{question}``,
``{memory}``); ``prompts/default.yaml`` holds the built-in wording in this form.
Everything that can be wrong with one is refused with the file and template
named: unknown keys or slots, missing slots, a slot the template is split at
used twice, unbalanced braces, and a template that leaves no room for a full
chunk within ``gconfig.max_tokens``.
"""

from __future__ import annotations

import json
import os
import string
from pathlib import Path

import yaml

from memagent_workflow.prompts import PromptTexts, builtin_prompts

SLOTS = {
    "memory_update": ("question", "memory", "chunk"),
    "final_answer": ("question", "memory"),
}
_ONCE = ("memory", "chunk")  # the template is split there: exactly one each


class PromptFileError(ValueError):
    """A prompts file that cannot be used, with the file and template named."""


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


def load_prompts(
    path: str | os.PathLike | None, protocol: str = "boxed"
) -> PromptTexts:
    """The templates of a YAML or JSON file, checked; None: the built-in ones,
    whose final prompt asks for ``protocol``'s answer form."""
    if path is None or str(path) == "":
        return builtin_prompts(protocol)
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
    unknown = sorted(map(str, set(data) - set(SLOTS)))
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
    A turn fits when prompt + new tokens < ``max_tokens`` (SGLang's rule against
    its context length, which the configs set to ``gconfig.max_tokens``).
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
        if overhead + need >= max_tokens:
            raise PromptFileError(
                f"{prompts.source}: template '{name}' takes {overhead} tokens with "
                f"the chat template and an empty question; with {parts} a turn "
                f"needs {overhead + need} >= gconfig.max_tokens={max_tokens}. Shorten "
                "the template, lower memagent.chunk_tokens, or raise "
                "gconfig.max_tokens (and the server's context length)."
            )


def as_prompt_texts(
    prompts: PromptTexts | dict[str, str] | str | None, protocol: str = "boxed"
) -> PromptTexts:
    """Prompt texts from what a caller passes (texts, a file path, or None for
    the built-in ones of ``protocol``)."""
    if isinstance(prompts, PromptTexts):
        return prompts
    if isinstance(prompts, dict):
        texts = PromptTexts(**prompts)
        for name in SLOTS:
            check_slots(name, getattr(texts, name), texts.source)
        return texts
    return load_prompts(prompts, protocol)

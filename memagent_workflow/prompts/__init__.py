"""The two MemAgent prompts: their wording, built in (``wording.py``) or a
user's prompts file, loaded and checked here.

The folder holds the prompts whole: ``wording.py`` (the built-in wording, its
only copy), ``tokens.py`` (a template as token ids), ``original.py`` and
``original_source.py`` (the original MemAgent's templates, fetched at a pinned
commit).

The texts are ``str.format`` templates: the memory-update prompt has the slots
``{question}``, ``{memory}`` and ``{chunk}``, the final-answer prompt
``{question}`` and ``{memory}`` (literal braces are written ``{{ }}``). The
built-in wording is the only copy; ``memagent.prompts`` names a YAML or
JSON file that replaces it, with exactly the keys ``memory_update`` and
``final_answer``. Everything that can be wrong with such a file is refused with
the file and template named: unknown keys or slots, missing slots, a slot the
template is split at used twice, unbalanced braces. (Whether the templates
leave room for a full chunk is ``context.check_fit``'s; how a template becomes
token ids, ``tokens.py``'s.)

``memagent.prompts=original`` (and its spellings) reads the original MemAgent's
templates from its source instead, fetched at a pinned commit:
``original.py``.

To start a file from the built-in wording::

    uv run python -m memagent_workflow.prompts > MY_PROMPTS.yaml
"""

from __future__ import annotations

import argparse
import os
import string
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from memagent_workflow.data.files import utf8_problem
from memagent_workflow.data.schema import show
from memagent_workflow.prompts.original import original_templates, parse_spec
from memagent_workflow.prompts.original_source import OriginalPromptsError
from memagent_workflow.prompts.strict import strict_json, strict_yaml
from memagent_workflow.prompts.tokens import (
    PromptTemplate,
    text_template,
    token_template,
)
from memagent_workflow.prompts.wording import (
    FINAL_ANSWER_PROMPT,
    FINAL_PROMPTS,
    MEMORY_UPDATE_PROMPT,
)

SLOTS = {
    "memory_update": ("question", "memory", "chunk"),
    "final_answer": ("question", "memory"),
}
_ONCE = ("memory", "chunk")  # the template is split there: exactly one each


def memory_update_template(
    tokenizer, question: str, template: str = MEMORY_UPDATE_PROMPT
) -> PromptTemplate:
    """Token template of a memory turn: instruction, question, memory, section."""
    return token_template(tokenizer, question, template, with_chunk=True)


def final_answer_template(
    tokenizer, question: str, template: str = FINAL_ANSWER_PROMPT
) -> PromptTemplate:
    """Token template of the final turn: instruction, question, memory; no chunk."""
    return token_template(tokenizer, question, template, with_chunk=False)


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
        make = text_template if _text(build) else token_template
        return make(tokenizer, question, self.memory_update, True)

    def final_template(self, tokenizer, question: str, build: str = "tokens"):
        """The final-turn prompt for ``question`` (``build`` as above)."""
        make = text_template if _text(build) else token_template
        return make(tokenizer, question, self.final_answer, False)


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


# ------------------------------------------------------------- prompts files
class PromptFileError(ValueError):
    """A prompts file that cannot be used, with the file and template named."""


def check_slots(name: str, text: str, where: str = "built-in prompts") -> None:
    """Refuse a template whose slots are not exactly ``SLOTS[name]``."""

    def bad(why: str) -> PromptFileError:
        return PromptFileError(f"{where}: template '{name}': {why}")

    if not isinstance(text, str) or not text.strip():
        raise bad(f"must be a non-empty string, got {show(text)}")
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
    path: str | os.PathLike | None, protocol: str | None = None
) -> PromptTexts:
    """The templates of a YAML or JSON file, checked; None: the built-in ones,
    whose final prompt asks for ``protocol``'s answer form (None: boxed);
    ``original...``: the original MemAgent's (``original.py``), refused
    if they ask for another form than ``protocol``."""
    if path is None or str(path) == "":
        return builtin_prompts(protocol or "boxed")
    try:
        spec = parse_spec(path)
        if spec is not None:
            memory_update, final_answer, source = original_templates(spec, protocol)
            texts = {"memory_update": memory_update, "final_answer": final_answer}
            return checked_texts(texts, source, source)
    except OriginalPromptsError as exc:
        raise PromptFileError(str(exc)) from None
    path = Path(path)
    where = f"prompts file {path}"
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise PromptFileError(f"{where}: cannot read it: {exc}") from None
    if (problem := utf8_problem(text)) is not None:
        raise PromptFileError(f"{where}: {problem}")
    kind = "JSON" if path.suffix == ".json" else "YAML"
    try:
        data = strict_json(text) if kind == "JSON" else strict_yaml(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise PromptFileError(f"{where}: not valid {kind}: {exc}") from None
    except RecursionError:
        raise PromptFileError(f"{where}: not valid {kind}: nested too deeply") from None
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
    return checked_texts(data, where, str(path))


def checked_texts(data: dict[str, str], where: str, source: str) -> PromptTexts:
    """Both templates of ``data``, each checked for its slots (``where`` names
    them in an error)."""
    for name in SLOTS:
        check_slots(name, data[name], where)
    return PromptTexts(data["memory_update"], data["final_answer"], source)


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


_FILE_HEADER = """\
# MemAgent prompts for memagent.prompts=FILE (YAML; JSON with the same keys works too).
# Keys, both required and no others:
#   memory_update  slots {question}, {memory}, {chunk}  (memory and chunk once each)
#   final_answer   slots {question}, {memory}           (memory once)
# The texts are Python str.format templates: write literal braces as {{ and }}
# (so \\boxed{{}} reads \\boxed{} in the prompt). `|-` keeps a text without a
# trailing newline, `|` with one; the chat template wraps each as one user message.
"""


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks, so the file reads like the prompt."""


_BlockDumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar(
        "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None
    ),
)


def prompts_file_text(texts: PromptTexts) -> str:
    """``texts`` as a prompts file that ``load_prompts`` reads back unchanged."""
    data = {"memory_update": texts.memory_update, "final_answer": texts.final_answer}
    body = yaml.dump(
        data, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=10**6
    )
    return _FILE_HEADER + body


def main(argv: list[str] | None = None) -> None:
    """Print the built-in prompts as a prompts file to edit."""
    ap = argparse.ArgumentParser(
        prog="python -m memagent_workflow.prompts",
        description="Print the built-in MemAgent prompts as a prompts file "
        "(memagent.prompts) to copy and edit.",
    )
    ap.add_argument(
        "--answer-protocol",
        choices=list(FINAL_PROMPTS),
        default="boxed",
        help="the final prompt's answer form (memagent.answer_protocol)",
    )
    args = ap.parse_args(argv)
    sys.stdout.write(prompts_file_text(builtin_prompts(args.answer_protocol)))

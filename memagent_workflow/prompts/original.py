"""The original MemAgent's templates, fetched at a pinned commit: ``memagent.prompts=original``.

This project holds none of the original's wording. The key names source files
of github.com/BytedTsinghua-SIA/MemAgent; each is downloaded once from
raw.githubusercontent.com, checked against its pinned sha256, kept in the cache
(``$XDG_CACHE_HOME/memagent``, else ``~/.cache/memagent``; all in
``original_source.py``), and the two templates are taken out of its Python
source with ``ast`` (named string constants) and turned into this project's
``str.format`` templates:

- ``train`` (``recurrent/impls/memory.py``): pasted into the chat string and
  never formatted, so every brace is literal text: each is doubled here
  (``\\boxed{{}}`` in the source's value reaches the model as written).
- ``eval-boxed`` / ``eval-answer_is`` (``taskutils/memory_eval/utils/
  recurrent_boxed.py`` / ``recurrent.py``): formatted by the original, so the
  value already is a format template and its escapes stay as they are.

In both, the original's ``{prompt}`` slot becomes ``{question}`` and every other
character, trailing newline included, is kept.

Spellings: ``original[-VARIANT][@COMMIT][:DIR]``. Without a variant, the
training templates; an eval config (``MemAgentEvalConfig``) turns a bare
``original`` into the eval templates of its ``memagent.answer_protocol``
(``eval_spec``). ``@COMMIT`` (40 hex digits) reads another commit: only the
pinned one has checksums, so another one is used unchecked, with a warning.
``:DIR`` reads the file from a folder instead of the network: ``DIR/<path in
the repository>`` or ``DIR/<file name>`` (the pinned checksum still applies).
"""

from __future__ import annotations

import ast
import os
import re
import string
from dataclasses import dataclass, replace
from pathlib import Path

from memagent_workflow.prompts.original_source import (
    COMMIT,
    EVAL_ANSWER_IS_FILE,
    EVAL_BOXED_FILE,
    KEY,
    REPO,
    TRAIN_FILE,
    OriginalPromptsError,
    source_bytes,
)

#: The original's slot names -> this project's.
SLOT_NAMES = {"prompt": "question", "memory": "memory", "chunk": "chunk"}
# How the original's TokenTemplate (recurrent/utils.py) finds a slot.
_TOKEN_SLOT = re.compile(r"\{([a-zA-Z]+)\}")


@dataclass(frozen=True)
class Variant:
    """One file of the original and the two constants holding its templates."""

    path: str
    memory_update: str  # constant names in that file
    final_answer: str
    pasted: bool  # True: never str.format-ted by the original (its braces are text)
    protocol: str  # the answer form its final template asks for


VARIANTS = {
    "train": Variant(TRAIN_FILE, "TEMPLATE", "TEMPLATE_FINAL_BOXED", True, "boxed"),
    "eval-boxed": Variant(
        EVAL_BOXED_FILE, "TEMPLATE", "TEMPLATE_FINAL", False, "boxed"
    ),
    "eval-answer_is": Variant(
        EVAL_ANSWER_IS_FILE, "TEMPLATE", "TEMPLATE_FINAL", False, "answer_is"
    ),
}
_SPEC = re.compile(
    rf"{KEY}(?:-(?P<variant>{'|'.join(map(re.escape, VARIANTS))}))?"
    r"(?:@(?P<commit>[0-9a-f]{40}))?(?::(?P<dir>.+))?"
)
SPELLINGS = f"{KEY}[-{'|-'.join(VARIANTS)}][@<40-hex commit>][:DIR]"


@dataclass(frozen=True)
class OriginalSpec:
    """A parsed ``memagent.prompts=original...`` value."""

    variant: str | None = None  # None: chosen by where it is used
    commit: str = COMMIT
    directory: str | None = None

    def spelled(self) -> str:
        """The value that parses back to this spec."""
        out = KEY + (f"-{self.variant}" if self.variant else "")
        out += f"@{self.commit}" if self.commit != COMMIT else ""
        return out + (f":{self.directory}" if self.directory else "")


def _looks_like_key(text: str) -> bool:
    return text == KEY or text.startswith((KEY + "-", KEY + "@", KEY + ":"))


def is_spelling(value: str) -> bool:
    """True when ``value`` spells the key (not a prompts file's path)."""
    return _SPEC.fullmatch(value) is not None


def resolve_dir(value: str, cwd: Path) -> str:
    """A spelling whose ``:DIR`` (if any) is made absolute against ``cwd``."""
    spec = parse_spec(value)
    if spec is None or spec.directory is None:
        return value
    folder = os.path.abspath(cwd / os.path.expanduser(spec.directory))
    return replace(spec, directory=folder).spelled()


def parse_spec(value: str | os.PathLike | None) -> OriginalSpec | None:
    """The spec ``value`` spells, or None when it names a prompts file."""
    if value is None:
        return None
    text = str(value)
    if not _looks_like_key(text):
        return None
    m = _SPEC.fullmatch(text)
    if m:
        return OriginalSpec(m["variant"], m["commit"] or COMMIT, m["dir"])
    if Path(text).is_file():  # a prompts file that happens to be called so
        return None
    raise OriginalPromptsError(
        f"memagent.prompts={text!r}: neither a file nor a spelling of {SPELLINGS}"
    )


def eval_spec(value: str | None, protocol: str) -> str | None:
    """``value`` as an eval config uses it: a bare ``original`` (any commit or
    folder) becomes the eval templates asking for ``protocol``'s answer form."""
    spec = parse_spec(value)
    if spec is None or spec.variant is not None:
        return value
    return OriginalSpec(f"eval-{protocol}", spec.commit, spec.directory).spelled()


def string_constants(
    source: str | bytes, names: tuple[str, ...], where: str
) -> dict[str, str]:
    """The values of the module-level string constants ``names`` (the last
    assignment wins, as in Python), read with ``ast``: nothing is executed."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise OriginalPromptsError(f"{where}: not Python source: {exc}") from None
    found: dict[str, str] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id in names:
                value = node.value
                if not (
                    isinstance(value, ast.Constant) and isinstance(value.value, str)
                ):
                    raise OriginalPromptsError(
                        f"{where}: {target.id} is not a string literal"
                    )
                found[target.id] = value.value
    missing = [n for n in names if n not in found]
    if missing:
        raise OriginalPromptsError(
            f"{where}: no module-level string constant {missing}"
        )
    return found


def _escaped(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _slot(name: str, where: str) -> str:
    if name not in SLOT_NAMES:
        raise OriginalPromptsError(
            f"{where}: unknown slot {{{name}}} (expected {sorted(SLOT_NAMES)})"
        )
    return "{" + SLOT_NAMES[name] + "}"


def as_format_template(value: str, pasted: bool, where: str) -> str:
    """The original's template ``value`` as this project's ``str.format`` template
    that shows the model the same text."""
    out: list[str] = []
    if pasted:  # cut where TokenTemplate cuts; every other brace is text
        for i, part in enumerate(_TOKEN_SLOT.split(value)):
            out.append(_slot(part, where) if i % 2 else _escaped(part))
        return "".join(out)
    try:
        fields = list(string.Formatter().parse(value))
    except ValueError as exc:
        raise OriginalPromptsError(f"{where}: not a format template: {exc}") from None
    for literal, name, spec, conversion in fields:
        out.append(_escaped(literal))
        if name is not None:
            if spec or conversion:
                raise OriginalPromptsError(f"{where}: slot {{{name}}} is not plain")
            out.append(_slot(name, where))
    return "".join(out)


def variant_of(spec: OriginalSpec, protocol: str | None) -> str:
    """The variant ``spec`` reads (bare: training), refused if its final prompt
    asks for another answer form than ``protocol`` (None: not checked)."""
    variant = spec.variant or "train"
    asks = VARIANTS[variant].protocol
    if protocol is not None and asks != protocol:
        fits = [v for v, var in VARIANTS.items() if var.protocol == protocol]
        raise OriginalPromptsError(
            f"memagent.prompts={spec.spelled()}: the original's {variant} final "
            f"template asks for the {asks} answer form, but memagent.answer_protocol="
            f"{protocol}; use {' or '.join(f'{KEY}-{v}' for v in fits)}, or "
            f"answer_protocol={asks}"
        )
    return variant


def original_templates(
    spec: OriginalSpec, protocol: str | None = None
) -> tuple[str, str, str]:
    """(memory_update, final_answer, source) of the original's ``spec``."""
    variant = variant_of(spec, protocol)
    v = VARIANTS[variant]
    key = OriginalSpec(variant, spec.commit).spelled()
    data = source_bytes(v.path, spec.commit, spec.directory, key)
    where = f"{REPO}@{spec.commit[:12]}:{v.path}"
    values = string_constants(data, (v.memory_update, v.final_answer), where)
    memory = as_format_template(
        values[v.memory_update], v.pasted, f"{where} {v.memory_update}"
    )
    final = as_format_template(
        values[v.final_answer], v.pasted, f"{where} {v.final_answer}"
    )
    return memory, final, f"{KEY}-{variant} ({where})"

"""Long contexts tokenised, and what a turn's prompt may hold.

Tokenising: a whole-string encode of a 3.5M-token document costs ~17 s of CPU
and ~2 GB of transient memory. Here the text is cut into ~64 KB pieces at places
where the cut provably does not change the tokens of the surrounding text, the
pieces are batch-encoded (the Rust tokenizer releases the GIL and uses every
core), and the ids are kept as one int32 array (4 bytes a token instead of ~36).

What a turn may hold: SGLang answers 400 unless prompt + max_new_tokens < its
context length, which the configs set to ``gconfig.max_tokens``. ``turn_fits``
is that rule, the only copy: the workflow refuses a turn it would reject before
sending it (AReaL would retry it and lose the episode), ``check_fit`` refuses
templates that leave no room for a full chunk, and the preflight counts turns
with the same ``TurnBudget``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from memagent_workflow.prompts import PromptTexts

PIECE_CHARS = 64 * 1024
BATCH_PIECES = 16
_WINDOW = 256  # characters of context either side of a candidate cut
_SEARCH = 4096  # how far past the target a cut is searched for
_CHAR_TRIES = 64  # characters tried by find_char_cut
_SHIFTS = (0, 1, 2, 3)  # find_char_cut's left windows start this far apart


def encode_batch(tokenizer, texts: list[str]) -> list[list[int]]:
    """Each text's ids, no special tokens added."""
    # The Rust tokenizer's offset-free batch encode: the same ids for ~27% less
    # CPU than tokenizer(texts) (bench/results.md, benchmark 1).
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and hasattr(backend, "encode_batch_fast"):
        encodings = backend.encode_batch_fast(texts, add_special_tokens=False)
        return [e.ids for e in encodings]
    out = tokenizer(texts, add_special_tokens=False, return_attention_mask=False)
    return out["input_ids"]


def _cut_is_safe(tokenizer, text: str, cut: int) -> bool:
    """Whether splitting ``text`` at ``cut`` leaves the local tokens unchanged."""
    left = text[max(0, cut - _WINDOW) : cut]
    right = text[cut : cut + _WINDOW]
    whole, a, b = encode_batch(tokenizer, [left + right, left, right])
    return whole == a + b


def _find_cut(tokenizer, text: str, target: int) -> int | None:
    """First safe cut at or after ``target``, preferring paragraph breaks."""
    end = min(len(text), target + _SEARCH)
    for sep in ("\n\n", "\n", " "):
        pos = text.find(sep, target, end)
        while pos != -1:
            cut = pos + len(sep)
            if cut < len(text) and _cut_is_safe(tokenizer, text, cut):
                return cut
            pos = text.find(sep, pos + 1, end)
    return None


def find_char_cut(tokenizer, text: str, target: int) -> int | None:
    """First cut at any character in ``_CHAR_TRIES`` from ``target`` that is
    safe with left windows starting ``_SHIFTS`` characters apart: for text with
    no whitespace to cut at. A long run of one pattern ("aaaa", "====") gets
    none: there, where BPE splits depends on where the run began, which a
    window from one start alone does not show."""
    right_ends = min(len(text), target + _CHAR_TRIES)
    for cut in range(max(target, _WINDOW), right_ends):
        right = text[cut : cut + _WINDOW]
        if len(right) < _WINDOW:
            return None
        texts = []
        for shift in _SHIFTS:
            left = text[cut - _WINDOW + shift : cut]
            texts += [left + right, left, right]
        ids = encode_batch(tokenizer, texts)
        if all(ids[i] == ids[i + 1] + ids[i + 2] for i in range(0, len(ids), 3)):
            return cut
    return None


def split_text(tokenizer, text: str, piece_chars: int = PIECE_CHARS) -> list[str]:
    """Pieces of ``text`` whose concatenated encodings equal the whole encoding."""
    pieces, start = [], 0
    while len(text) - start > piece_chars:
        cut = _find_cut(tokenizer, text, start + piece_chars)
        if cut is None:  # no safe cut nearby: try again further on
            cut = _find_cut(tokenizer, text, start + piece_chars + _SEARCH)
            if cut is None:
                break
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


def encode_context(tokenizer, text: str, piece_chars: int = PIECE_CHARS) -> np.ndarray:
    """Token ids of ``text`` (no special tokens) as an int32 array."""
    if not text:
        return np.zeros(0, dtype=np.int32)
    pieces = split_text(tokenizer, text, piece_chars)
    arrays = []
    for i in range(0, len(pieces), BATCH_PIECES):
        for ids in encode_batch(tokenizer, pieces[i : i + BATCH_PIECES]):
            arrays.append(np.asarray(ids, dtype=np.int32))
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int32)


async def aencode_context(tokenizer, text: str) -> np.ndarray:
    """`encode_context` in a worker thread, so the event loop keeps serving turns."""
    return await asyncio.to_thread(encode_context, tokenizer, text)


# ------------------------------------------------------ what a turn may hold
FIT_RULE = "prompt + max_new_tokens < gconfig.max_tokens"
_WHY = (
    "SGLang runs a turn only if prompt + max_new_tokens < its context length, "
    "sglang.context_length, which the configs set to gconfig.max_tokens"
)


class TurnTooLong(ValueError):
    """A turn whose prompt and new tokens do not fit ``gconfig.max_tokens``."""


def prompt_room(new_tokens: int, max_tokens: int) -> int:
    """The longest prompt that fits beside ``new_tokens`` (``turn_fits``)."""
    return max_tokens - new_tokens - 1


def turn_fits(prompt_tokens: int, new_tokens: int, max_tokens: int) -> bool:
    """SGLang's rule: a prompt plus its new tokens stays below the context length."""
    return prompt_tokens <= prompt_room(new_tokens, max_tokens)


def check_turn(
    prompt_tokens: int,
    new_tokens: int,
    max_tokens: int,
    *,
    what: str = "",
    fix: str = "raise gconfig.max_tokens (and sglang.context_length with it) "
    "or lower memagent.chunk_tokens",
) -> None:
    """Raise ``TurnTooLong`` unless ``turn_fits``; ``what`` says where the prompt's
    tokens come from, ``fix`` which knobs make room."""
    if turn_fits(prompt_tokens, new_tokens, max_tokens):
        return
    raise TurnTooLong(
        f"a prompt of {prompt_tokens} tokens{what} plus {new_tokens} new tokens "
        f"reaches gconfig.max_tokens={max_tokens} ({_WHY}): {fix}"
    )


@dataclass(frozen=True)
class TurnBudget:
    """The most tokens one kind of turn holds: its prompt's parts, its new tokens."""

    name: str  # the template: memory_update or final_answer
    template: int  # the prompt's own tokens (chat template, instruction)
    memory: int
    chunk: int  # 0 in the final turn
    new: int  # its max_new_tokens

    @property
    def prompt(self) -> int:
        return self.template + self.memory + self.chunk

    @property
    def total(self) -> int:
        return self.prompt + self.new

    def describe(self) -> str:
        chunk = f" + chunk {self.chunk}" if self.chunk else ""
        return (
            f"{self.name}: template {self.template} + memory {self.memory}{chunk}"
            f" + new {self.new} = {self.total}"
        )

    def check(self, max_tokens: int, source: str) -> None:
        """``check_turn`` for this turn at its fullest, naming template ``source``."""
        chunk = f", chunk {self.chunk}" if self.chunk else ""
        knobs = "chunk_tokens" if self.chunk else "max_final_tokens"
        check_turn(
            self.prompt,
            self.new,
            max_tokens,
            what=f" (template '{self.name}', {source}: {self.template} tokens with "
            f"the chat template and an empty question; memory {self.memory}{chunk})",
            fix=f"shorten the template, lower memagent.{knobs} or max_memory_tokens, "
            "or raise gconfig.max_tokens (and sglang.context_length with it)",
        )


def turn_budgets(
    template_tokens: tuple[int, int],
    *,
    chunk_tokens: int,
    max_memory_tokens: int,
    max_final_tokens: int,
    initial_memory_tokens: int = 0,
) -> tuple[TurnBudget, TurnBudget]:
    """The fullest memory turn and final turn, given the two templates' own
    tokens (``template_tokens``: memory-update, final-answer)."""
    memory = max(max_memory_tokens, initial_memory_tokens)
    update, final = template_tokens
    return (
        TurnBudget("memory_update", update, memory, chunk_tokens, max_memory_tokens),
        TurnBudget("final_answer", final, memory, 0, max_final_tokens),
    )


def template_tokens(
    tokenizer, prompts: PromptTexts, build: str = "tokens"
) -> tuple[int, int]:
    """The memory-update and final-answer templates' own tokens, chat template
    included, with an empty question (a question's tokens come on top)."""
    return (
        prompts.memory_template(tokenizer, "", build).overhead,
        prompts.final_template(tokenizer, "", build).overhead,
    )


def check_fit(
    tokenizer,
    prompts: PromptTexts,
    *,
    max_tokens: int,
    build: str = "tokens",
    **knobs: int,
) -> None:
    """Refuse templates that leave no room for a full chunk, the memory and the
    new tokens within ``max_tokens``; ``knobs``: ``turn_budgets``'s. Counted with
    an empty question: a turn that a long question overfills is refused when it
    comes (``check_turn``)."""
    budgets = turn_budgets(template_tokens(tokenizer, prompts, build), **knobs)
    for budget in budgets:
        budget.check(max_tokens, prompts.source)

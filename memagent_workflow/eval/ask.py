"""One document and one question through the eval workflow (``examples/ask.py``).

The document is read from disk in pieces and encoded piece by piece at cuts
that do not change the tokens (``context.py``'s rule), so a multi-million-token
text is held as its int32 token ids only. Everything a run could be refused
for (an unreadable or empty document, a question longer than the prompt leaves
room for, a chunk size that leaves no room) is checked here, before any server
starts. No AReaL import at module level.
"""

from __future__ import annotations

import io
import sys
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from memagent_workflow.chunking import chunk_views
from memagent_workflow.context import _find_cut, encode_batch, prompt_room
from memagent_workflow.episode import Document
from memagent_workflow.eval.results import make_record
from memagent_workflow.eval.workflow import EvalSample, MemAgentEvalWorkflow
from memagent_workflow.reward import extract_answer

BLOCK_CHARS = 1 << 20  # characters read from disk at a time
_TAIL = 8192  # a piece is cut within this many characters of its end


class AskRefused(ValueError):
    """Bad input to ``ask.py``: the message names the input and the limit."""


def open_document(path: str) -> io.TextIOBase:
    """The document as a text stream (``-``: standard input), checked readable."""
    if path == "-":
        return sys.stdin
    p = Path(path)
    if not p.is_file():
        raise AskRefused(f"--document {path}: no such file")
    try:
        return p.open(encoding="utf-8")
    except OSError as exc:
        raise AskRefused(f"--document {path}: cannot be read ({exc})") from None


def encode_stream(tokenizer, stream: io.TextIOBase, name: str) -> np.ndarray:
    """The token ids of a text stream, read ``BLOCK_CHARS`` at a time; refuses
    an undecodable or empty (whitespace-only) document, naming it."""
    arrays, buffer, seen_text = [], "", False
    try:
        while True:
            block = stream.read(BLOCK_CHARS)
            buffer += block
            seen_text = seen_text or bool(block.strip())
            if block and len(buffer) < 2 * _TAIL:
                continue
            cut = (
                None if not block else _find_cut(tokenizer, buffer, len(buffer) - _TAIL)
            )
            if block and cut is None:
                continue  # no safe cut near the end yet: read on
            piece, buffer = (
                (buffer, "") if cut is None else (buffer[:cut], buffer[cut:])
            )
            if piece:
                arrays.append(np.asarray(encode_batch(tokenizer, [piece])[0], np.int32))
            if not block:
                break
    except UnicodeDecodeError as exc:
        raise AskRefused(f"--document {name}: not UTF-8 text ({exc})") from None
    except OSError as exc:
        raise AskRefused(f"--document {name}: cannot be read ({exc})") from None
    if not seen_text:
        raise AskRefused(f"--document {name}: empty (no text to read)")
    return np.concatenate(arrays)


def check_question(workflow: MemAgentEvalWorkflow, question: str) -> None:
    """Refuse an empty question, or one that leaves a memory or final turn no
    room for a full chunk and memory (``gconfig.max_tokens``)."""
    if not question.strip():
        raise AskRefused("--question: empty")
    w, build = workflow, workflow.prompt_build
    memory = max(w.memory_gconfig.max_new_tokens, len(w.initial_memory))
    turns = (
        (
            "memory turn",
            w.prompts.memory_template(w.tokenizer, question, build).overhead,
            memory + w.chunk_tokens,
            w.memory_gconfig,
        ),
        (
            "final turn",
            w.prompts.final_template(w.tokenizer, question, build).overhead,
            memory,
            w.final_gconfig,
        ),
    )
    for what, template, rest, g in turns:
        room = prompt_room(g.max_new_tokens, g.max_tokens)
        if template + rest > room:
            raise AskRefused(
                f"--question: with it the {what}'s template takes {template} tokens; "
                f"with memory and chunk ({rest}) that passes the {room} prompt tokens "
                f"gconfig.max_tokens={g.max_tokens} leaves beside "
                f"{g.max_new_tokens} new tokens: shorten the question, lower "
                "memagent.chunk_tokens or raise gconfig.max_tokens"
            )


def report_turn(path: str, turn: int, memory_tokens: int) -> None:
    """Append ``turn memory_tokens`` to the progress file (a rollout worker's
    turns, read by ask.py's bar in its own process)."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{turn} {memory_tokens}\n")


def read_progress(path: Path) -> tuple[int, int] | None:
    """The last whole ``(turn, memory tokens)`` line of a progress file, if any."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    lines = text.split("\n")[:-1]  # a line still being written has no newline
    if not lines:
        return None
    turn, tokens = lines[-1].split()
    return int(turn), int(tokens)


class AskWorkflow(MemAgentEvalWorkflow):
    """The eval workflow on a document given as token ids (``context_ids``);
    with no gold answer the record is left unscored. ``progress_file``: each
    memory turn is appended there (a remote worker's bar, ``report_turn``)."""

    def __init__(self, *args: Any, progress_file: str | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        if progress_file is not None and self.on_turn is None:
            self.on_turn = partial(report_turn, progress_file)

    async def read_document(self, data: dict[str, Any]) -> Document:
        ids = np.asarray(data["context_ids"], dtype=np.int32)
        chunks, _ = chunk_views(ids, self.chunk_tokens)
        q = data["question"]
        return Document(
            id=str(data["id"]),
            question=q,
            answers=list(data.get("answers") or []),
            chunks=chunks,
            context_tokens=len(ids),
            truncated_tokens=0,
            memory_prompt=self.prompts.memory_template(
                self.tokenizer, q, self.prompt_build
            ),
            final_prompt=self.prompts.final_template(
                self.tokenizer, q, self.prompt_build
            ),
        )

    def record(
        self, sample: EvalSample, prediction: str | None, **kw: Any
    ) -> dict[str, Any]:
        if sample.answers:
            return super().record(sample, prediction, **kw)
        rec = make_record(sample.id, ["-"], prediction, **sample.fields, **kw)
        extracted = (
            extract_answer(prediction, self.answer_protocol) if prediction else None
        )
        rec.update(answers=[], extracted=extracted, sub_em=None, em=None, f1=None)
        return {**rec, **sample.extra}

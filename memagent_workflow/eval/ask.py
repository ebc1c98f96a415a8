"""One document and one question through the eval workflow (``examples/ask.py``).

The document is read from disk in pieces and encoded piece by piece at cuts
that do not change the tokens (``context.py``'s rule), so a multi-million-token
text is held as its int32 token ids only; a launched rollout worker gets them
as a file on the shared root (``save_ids``), not in the RPC. Everything a run
could be refused for (an unreadable, non-UTF-8 or empty document, a question
longer than the prompt leaves room for, a chunk size that leaves no room) is
checked here, before any server starts. No AReaL import at module level.
"""

from __future__ import annotations

import io
import sys
import uuid
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from memagent_workflow.chunking import chunk_views
from memagent_workflow.context import (
    _find_cut,
    encode_batch,
    find_char_cut,
    prompt_room,
)
from memagent_workflow.data.files import not_utf8, utf8_error_at
from memagent_workflow.episode import Document
from memagent_workflow.eval.results import make_record
from memagent_workflow.eval.workflow import (
    EvalSample,
    MemAgentEvalWorkflow,
    SampleRefused,
)
from memagent_workflow.reward import extract_answer

BLOCK_CHARS = 1 << 20  # characters read from disk at a time
_TAIL = 8192  # a piece is cut within this many characters of its end


class AskRefused(ValueError):
    """Bad input to ``ask.py``: the message names the input and the limit."""


def open_document(path: str) -> io.TextIOBase:
    """The document as a text stream (``-``: standard input), checked readable.
    Both are read as strict UTF-8 whatever the locale: under a C/POSIX one
    Python reads standard input with ``surrogateescape``, which would let bytes
    that are not UTF-8 through to the tokenizer."""
    if path == "-":
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="strict")
    p = Path(path)
    if p.is_dir():
        raise AskRefused(f"--document {path}: is a directory, not a text file")
    if not p.is_file():
        raise AskRefused(f"--document {path}: no such file")
    try:
        return p.open(encoding="utf-8")
    except OSError as exc:
        raise AskRefused(f"--document {path}: cannot be read ({exc})") from None


def encode_stream(tokenizer, stream: io.TextIOBase, name: str) -> np.ndarray:
    """The token ids of a text stream, read ``BLOCK_CHARS`` at a time; refuses
    an undecodable or empty (whitespace-only) document, naming it.

    Each piece is cut at whitespace near the end of what was read (``_find_cut``);
    text with none there is read on up to ``2 * BLOCK_CHARS`` characters, then
    cut at a character (``find_char_cut``), or, in a long run of one pattern
    where no cut is safe, cut there anyway (``hard_cut``): the buffer, and so
    the text encoded at once, never passes ``3 * BLOCK_CHARS`` characters."""
    arrays, buffer, seen_text = [], "", False
    try:
        while block := stream.read(BLOCK_CHARS):
            buffer += block  # linear overall: the buffer is bounded
            seen_text = seen_text or bool(block.strip())
            if len(buffer) < 2 * _TAIL:
                continue
            target = len(buffer) - _TAIL
            cut = _find_cut(tokenizer, buffer, target)
            if cut is None and len(buffer) >= 2 * BLOCK_CHARS:
                cut = find_char_cut(tokenizer, buffer, target)
                cut = hard_cut(name, target) if cut is None else cut
            if cut is not None:
                arrays.append(_encode(tokenizer, buffer[:cut]))
                buffer = buffer[cut:]
        if buffer:
            arrays.append(_encode(tokenizer, buffer))
    except UnicodeDecodeError as exc:  # the file's own position, where it is one
        at = utf8_error_at(name) if Path(name).is_file() else None
        raise AskRefused(f"--document {name}: not UTF-8 text ({at or exc})") from None
    except OSError as exc:
        raise AskRefused(f"--document {name}: cannot be read ({exc})") from None
    if not seen_text:
        raise AskRefused(f"--document {name}: empty (no text to read)")
    return np.concatenate(arrays)


def _encode(tokenizer, piece: str) -> np.ndarray:
    return np.asarray(encode_batch(tokenizer, [piece])[0], np.int32)


def hard_cut(name: str, at: int) -> int:
    """``at``, with a warning: the tokens at this one seam may be split otherwise
    than in an encoding of the whole text (the same characters, other tokens)."""
    from areal.utils import logging

    logging.getLogger("MemAgentAsk").warning(
        f"--document {name}: {2 * BLOCK_CHARS} characters without a safe cut "
        "(no whitespace, one repeated pattern); cut there: the tokens at that "
        "seam may differ from those of the whole text"
    )
    return at


def check_question(workflow: MemAgentEvalWorkflow, question: str) -> None:
    """Refuse an empty question, or one that leaves a memory or final turn no
    room for a full chunk and memory (``gconfig.max_tokens``)."""
    if not question.strip():
        raise AskRefused("--question: empty")
    if (problem := not_utf8(question)) is not None:  # argv's undecodable bytes
        raise AskRefused(f"--question: {problem}")
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


def save_ids(ids: np.ndarray, fileroot: str) -> Path:
    """The ids as a ``.npy`` file under ``fileroot/ask``: what a launched rollout
    worker reads (``context_ids_file``), 4 bytes a token, instead of a list of
    Python ints in the RPC (ask.py removes it after the run)."""
    path = Path(fileroot) / "ask" / f"{uuid.uuid4()}.ids.npy"
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, np.asarray(ids, dtype=np.int32))
    return path


def load_ids(data: dict[str, Any]) -> np.ndarray:
    """A sample's ``context_ids``, or those of its ``context_ids_file``."""
    if "context_ids_file" not in data:
        return np.asarray(data["context_ids"], dtype=np.int32)
    path = data["context_ids_file"]
    try:
        return np.load(path).astype(np.int32, copy=False)
    except (OSError, ValueError) as exc:
        raise SampleRefused(
            f"context_ids_file {path}: cannot be read here ({exc}); "
            "cluster.fileroot must be a folder every worker sees"
        ) from None


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
    """The eval workflow on a document given as token ids (``context_ids``, or
    ``context_ids_file``: ``save_ids``); with no gold answer the record is left
    unscored. ``progress_file``: each memory turn is appended there (a remote
    worker's bar, ``report_turn``)."""

    def __init__(self, *args: Any, progress_file: str | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        if progress_file is not None and self.on_turn is None:
            self.on_turn = partial(report_turn, progress_file)

    async def read_document(self, data: dict[str, Any]) -> Document:
        ids = load_ids(data)
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

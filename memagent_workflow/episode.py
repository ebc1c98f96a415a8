"""What a MemAgent episode works on and produces: the document, the episode's
running record, and the data item read through the row schema."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memagent_workflow.data.files import DataError
from memagent_workflow.data.schema import BadField, parse_row
from memagent_workflow.prompts.tokens import PromptTemplate
from memagent_workflow.rows import Turn


@dataclass
class Document:
    """A question with its tokenised, chunked context and its two prompts."""

    id: str
    question: str
    answers: list[str]
    chunks: list[np.ndarray]
    context_tokens: int
    truncated_tokens: int
    memory_prompt: PromptTemplate
    final_prompt: PromptTemplate


@dataclass
class Episode:
    """What one pass over the document produced.

    Only running sums grow with the number of turns; the turns themselves are
    kept only when they are needed as training rows.
    """

    turns: list[Turn] = field(default_factory=list)
    answer: str = ""
    final_stop_reason: str = ""
    memory_turns: int = 0
    memory_tokens: int = 0
    memory_hit_limit: int = 0
    memory_empty: int = 0
    output_tokens: int = 0
    latency: float = 0.0
    oldest_version: int | None = None  # oldest policy version that wrote a token
    retried_calls: int = 0  # model calls that failed and were made again
    # Names the episode's requests (ModelRequest.metadata["episode"]); their rid
    # (AReaL's routing key) may be its group's.
    id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def add_turn(self, turn: Turn, keep: bool) -> None:
        """Count a finished model call; keep it as a training row if ``keep``."""
        self.output_tokens += len(turn.output_ids)
        self.latency += turn.latency
        if len(turn.versions):
            oldest = int(turn.versions.min())
            if self.oldest_version is None or oldest < self.oldest_version:
                self.oldest_version = oldest
        if keep:
            self.turns.append(turn)

    def add_memory(self, memory: np.ndarray, turn: Turn) -> None:
        """Count the memory ``turn`` wrote (``memory``: its tokens as kept)."""
        self.memory_turns += 1
        self.memory_tokens += len(memory)
        self.memory_hit_limit += int(turn.stop_reason == "length")
        self.memory_empty += int(len(memory) == 0)


def parse_item(data: Any) -> tuple[str, str, str, list[str]]:
    """``(id, question, context, answers)`` of a data item (the row schema).

    An empty context is allowed here: it is a well-defined episode with no
    memory turn. Raises :class:`DataError` naming the item and the field.
    """
    try:
        row = parse_row(data, allow_empty_context=True)
    except BadField as bad:
        item_id = data.get("id") if isinstance(data, dict) else None
        raise DataError(f"data item {item_id!r}: {bad}") from None
    return row["id"], row["question"], row["context"], row["answers"]

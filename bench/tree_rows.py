"""Synthetic MemAgent training rows of known shape, in either prompt order.

A group of ``group`` episodes reads ``turns`` chunks (one memory turn each) and
answers (the final turn). A memory turn's prompt is the instruction + question,
then the memory and the chunk (``order="memory_first"``, the paper's) or the
chunk and the memory (``"section_first"``); its output is the new memory. The
final turn's prompt is instruction + question + memory; its output the answer.
Every episode of a group reads the same chunks; memories and answers differ
per episode (the first memory is empty, as the paper's). Rows come episode by
episode, as the workflow emits them (``memagent_workflow/workflow.py``).

Sizes are tokens: `paper_shape` gives the paper's (16 episodes, 5,000-token
chunks, memory and answer up to 1,024, 8 memory turns + the final one).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

ORDERS = ("memory_first", "section_first")


@dataclass(frozen=True)
class Shape:
    """Token sizes of a group's rows."""

    group: int = 4
    turns: int = 3  # memory turns; plus the final one
    instruction: int = 12  # instruction + question
    chunk: int = 40
    memory: int = 10  # each memory the model writes
    answer: int = 6
    vocab: int = 200


def paper_shape(group: int = 16) -> Shape:
    """The paper's shapes (instruction + question about 180 tokens)."""
    return Shape(
        group=group, turns=8, instruction=180, chunk=5000, memory=1024, answer=1024
    )


def episode_rows(
    shape: Shape, order: str, seed: int = 0
) -> list[tuple[list[int], int]]:
    """``(tokens, prompt length)`` of every row of one group, episode-major."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    g = torch.Generator().manual_seed(seed)

    def draw(n: int) -> list[int]:
        return torch.randint(5, shape.vocab, (n,), generator=g).tolist()

    head = draw(shape.instruction)
    chunks = [draw(shape.chunk) for _ in range(shape.turns)]
    rows: list[tuple[list[int], int]] = []
    for _ in range(shape.group):
        memory: list[int] = []
        for chunk in chunks:
            prompt = head + (
                memory + chunk if order == "memory_first" else chunk + memory
            )
            memory = draw(shape.memory)
            rows.append((prompt + memory, len(prompt)))
        prompt = head + memory
        rows.append((prompt + draw(shape.answer), len(prompt)))
    return rows


def padded(rows: list[tuple[list[int], int]]) -> dict[str, torch.Tensor]:
    """AReaL's padded row tensors (input_ids, attention_mask, loss_mask)."""
    width = max(len(r) for r, _ in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.bool)
    loss = torch.zeros(len(rows), width, dtype=torch.int32)
    for i, (r, p) in enumerate(rows):
        ids[i, : len(r)] = torch.as_tensor(r)
        mask[i, : len(r)] = True
        loss[i, p : len(r)] = 1
    return {"input_ids": ids, "attention_mask": mask, "loss_mask": loss}


def group_batch(shape: Shape, order: str, seed: int = 0) -> dict[str, torch.Tensor]:
    """One group's padded rows, episode-major."""
    return padded(episode_rows(shape, order, seed))

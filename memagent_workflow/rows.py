"""Training rows: one per model call, padded into AReaL's trajectory tensors.

Besides AReaL's keys, a group's rows carry ``INDEX_KEY`` (the question) and ``TIED_KEY``: whether the group's
rewards all tied (every advantage exactly 0, so the rows add nothing to the
policy gradient). The trainer counts such groups and, if asked, keeps them out
of the actor's passes (``memagent_workflow/trainer/tied_groups.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

TIED_KEY = "tied"  # per-row flag: 1 where the row's group tied (all advantages 0)
# Per-row: which question of the train set the rows train (recovery/ledger.py).
INDEX_KEY = "question_index"


@dataclass
class Turn:
    """One model call of an episode: a memory update or the final answer."""

    prompt_ids: np.ndarray  # int32
    output_ids: np.ndarray  # int32
    logprobs: np.ndarray  # float32, one per output token
    versions: np.ndarray  # int32, policy version of each output token
    stop_reason: str
    latency: float
    trainable: bool = True

    @classmethod
    def from_response(cls, prompt_ids: list[int], resp, trainable: bool = True) -> Turn:
        if not (
            len(resp.output_tokens)
            == len(resp.output_logprobs)
            == len(resp.output_versions)
        ):
            raise ValueError(
                "engine response has mismatched lengths: "
                f"{len(resp.output_tokens)} tokens, {len(resp.output_logprobs)} "
                f"logprobs, {len(resp.output_versions)} versions"
            )
        return cls(
            prompt_ids=np.asarray(prompt_ids, dtype=np.int32),
            output_ids=np.asarray(resp.output_tokens, dtype=np.int32),
            logprobs=np.asarray(resp.output_logprobs, dtype=np.float32),
            versions=np.asarray(resp.output_versions, dtype=np.int32),
            stop_reason=resp.stop_reason,
            latency=float(resp.latency),
            trainable=trainable,
        )

    def __len__(self) -> int:
        return len(self.prompt_ids) + len(self.output_ids)


def shared_prompt_tokens(turns: list[Turn]) -> tuple[int, int]:
    """A group's prompt tokens, and how many of them repeat a prefix of another
    of its prompts (what one server's prefix cache, or one trie, computes once)."""
    prompts = [t.prompt_ids.tolist() for t in turns]
    total = sum(len(p) for p in prompts)
    return total, total - trie_tokens(prompts)


def pad_rows(turns: list[Turn], rewards: list[float]) -> dict[str, torch.Tensor]:
    """Right-padded ``[rows, L]`` tensors plus ``rewards [rows]``.

    Prompt tokens get loss_mask 0, logprob 0 and version -1; generated tokens get
    loss_mask 1 (0 for non-trainable turns), the engine's logprobs and versions.
    """
    if len(turns) != len(rewards):
        raise ValueError(f"{len(turns)} turns but {len(rewards)} rewards")
    n, width = len(turns), max(len(t) for t in turns)
    input_ids = torch.zeros(n, width, dtype=torch.int32)
    attention_mask = torch.zeros(n, width, dtype=torch.bool)
    loss_mask = torch.zeros(n, width, dtype=torch.int32)
    logprobs = torch.zeros(n, width, dtype=torch.float32)
    versions = torch.zeros(n, width, dtype=torch.int32)
    for i, t in enumerate(turns):
        p, total = len(t.prompt_ids), len(t)
        input_ids[i, :p] = torch.from_numpy(t.prompt_ids)
        input_ids[i, p:total] = torch.from_numpy(t.output_ids)
        attention_mask[i, :total] = True
        loss_mask[i, p:total] = int(t.trainable)
        logprobs[i, p:total] = torch.from_numpy(t.logprobs)
        versions[i, :p] = -1
        versions[i, p:total] = torch.from_numpy(t.versions)
    return {
        "input_ids": input_ids,
        "attention_mask": attention_mask,
        "loss_mask": loss_mask,
        "logprobs": logprobs,
        "versions": versions,
        "rewards": torch.tensor(rewards, dtype=torch.float32),
    }


def tied_flags(n_rows: int, advantages: list[float]) -> torch.Tensor:
    """``TIED_KEY``'s value for a group of ``n_rows`` rows: all 1 when every
    advantage is exactly 0, else all 0."""
    tied = all(a == 0.0 for a in advantages)
    return torch.full((n_rows,), int(tied), dtype=torch.int64)


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def trie_tokens(rows: list[list[int]]) -> int:
    """Tokens of the rows as one trie (each shared prefix counted once)."""
    ordered = sorted(rows)
    return sum(
        len(r) - (common_prefix(ordered[i - 1], r) if i else 0)
        for i, r in enumerate(ordered)
    )

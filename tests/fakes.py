"""A scripted inference engine for workflow tests."""

from __future__ import annotations

import asyncio
import random

from areal.api.io_struct import ModelResponse


class FakeEngine:
    """Answers every request at once and records what it was asked.

    A memory turn returns ``memory_tokens(call)`` followed by EOS; the final turn
    returns the encoding of ``answer_for(episode)``. Episodes are identified by
    the request id, which the workflow keeps for all turns of one episode.
    """

    def __init__(self, tokenizer, answer_for, version: int = 3, fail_for=()):
        self.tokenizer = tokenizer
        self.answer_for = answer_for
        self.version = version
        self.fail_for = set(fail_for)
        self.requests: list = []
        self.episodes: dict[str, int] = {}
        self.rng = random.Random(0)
        self.word_ids = tokenizer.encode(" memo", add_special_tokens=False)

    def get_version(self) -> int:
        return self.version

    def memory_tokens(self, call: int) -> list[int]:
        return self.word_ids * (1 + call % 3)

    async def agenerate(self, req) -> ModelResponse:
        await asyncio.sleep(0)
        episode = self.episodes.setdefault(req.rid, len(self.episodes))
        if episode in self.fail_for:
            raise RuntimeError(f"engine failure in episode {episode}")
        self.requests.append((episode, list(req.input_ids), req.gconfig))
        is_final = req.gconfig.max_new_tokens == self.final_budget
        if is_final:
            out = self.tokenizer.encode(
                self.answer_for(episode), add_special_tokens=False
            )
        else:
            out = self.memory_tokens(len(self.requests))
        out = out[: req.gconfig.max_new_tokens - 1] + [self.tokenizer.eos_token_id]
        return ModelResponse(
            input_tokens=list(req.input_ids),
            output_tokens=out,
            output_logprobs=[-self.rng.random() for _ in out],
            output_versions=[self.version] * len(out),
            stop_reason="stop",
            latency=0.01,
        )

    final_budget = 64

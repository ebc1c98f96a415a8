"""Scripted inference engines for workflow tests."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

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


@dataclass
class Call:
    """One request a `ScriptedEngine` answered: what it was asked and what it said."""

    episode: int
    turn: int
    input_ids: list[int]
    max_new_tokens: int
    output_ids: list[int]
    stop_reason: str
    logprobs: list[float]
    versions: list[int]
    latency: float


class ScriptedEngine:
    """Answers from a script and records every call, per episode and turn.

    ``script(episode, turn) -> (output_ids, stop_reason)``. Episodes are numbered
    in the order of their first request (the workflow keeps one rid per episode),
    turns from 0 within an episode. Every generated token gets its own logprob
    and version and every call its own latency, so a row or a metric that shifts,
    swaps or mixes them up shows. ``fail_at={episode: turn}`` raises at that turn.
    """

    def __init__(self, script, fail_at: dict[int, int] | None = None):
        self.script = script
        self.fail_at = dict(fail_at or {})
        self.calls: list[Call] = []
        self.episodes: dict[str, int] = {}
        self.turns: dict[int, int] = {}

    def get_version(self) -> int:
        return 0

    async def agenerate(self, req) -> ModelResponse:
        await asyncio.sleep(0)  # let the episodes of a group interleave
        episode = self.episodes.setdefault(req.rid, len(self.episodes))
        turn = self.turns[episode] = self.turns.get(episode, -1) + 1
        if self.fail_at.get(episode) == turn:
            raise RuntimeError(f"scripted failure: episode {episode}, turn {turn}")
        out, stop_reason = self.script(episode, turn)
        n = len(self.calls)
        # k / 4096 is exact in float32, so logprobs compare with ==
        logprobs = [-(1 + 64 * n + i) / 4096 for i in range(len(out))]
        versions = [3 + episode + turn + i // 2 for i in range(len(out))]
        call = Call(
            episode=episode,
            turn=turn,
            input_ids=list(req.input_ids),
            max_new_tokens=req.gconfig.max_new_tokens,
            output_ids=list(out),
            stop_reason=stop_reason,
            logprobs=logprobs,
            versions=versions,
            latency=0.25 * (1 + turn) + 0.125 * episode,
        )
        self.calls.append(call)
        return ModelResponse(
            input_tokens=list(req.input_ids),
            output_tokens=list(out),
            output_logprobs=logprobs,
            output_versions=versions,
            stop_reason=stop_reason,
            latency=call.latency,
        )

    def episode_calls(self, episode: int) -> list[Call]:
        """The calls of one episode, in turn order."""
        return sorted(
            (c for c in self.calls if c.episode == episode), key=lambda c: c.turn
        )


class MemoryScript:
    """A `ScriptedEngine` script whose every turn is a case with a known outcome.

    Memory turn ``k`` of episode ``e`` writes, by ``k % 6``: a memory + EOS; a
    memory cut at the budget (``budget`` tokens, no stop token, stop_reason
    "length"); EOS alone; a memory with out-of-vocabulary ids spliced in + EOS;
    only out-of-vocabulary ids + EOS; a memory + PAD (also a stop token). Turn
    ``n_chunks`` is the final answer: ``answers[e]`` + EOS. Memories differ from
    turn to turn and from episode to episode.

    `kept` is the oracle: the tokens the next prompt's memory slot must hold.
    """

    KINDS = ("eos", "cut", "empty", "oov", "all_oov", "pad")

    def __init__(self, tokenizer, n_chunks: int, answers: list[str], budget: int):
        assert budget >= 10
        self.tokenizer = tokenizer
        self.n_chunks = n_chunks
        self.answers = answers
        self.budget = budget
        self.eos, self.pad = tokenizer.eos_token_id, tokenizer.pad_token_id
        self.oov = [len(tokenizer), len(tokenizer) + 5]

    def kind(self, turn: int) -> str:
        return self.KINDS[turn % len(self.KINDS)]

    def body(self, episode: int, turn: int, n: int) -> list[int]:
        return [5 + (37 * (16 * episode + turn) + 11 * i) % 480 for i in range(n)]

    def kept(self, episode: int, turn: int) -> list[int]:
        """The memory that memory turn ``turn`` leaves (empty: none was written)."""
        n = 3 + (episode + turn) % 5
        return {
            "eos": self.body(episode, turn, n),
            "cut": self.body(episode, turn, self.budget),
            "empty": [],
            "oov": self.body(episode, turn, 4),
            "all_oov": [],
            "pad": self.body(episode, turn, n),
        }[self.kind(turn)]

    def __call__(self, episode: int, turn: int) -> tuple[list[int], str]:
        if turn == self.n_chunks:
            answer = self.answers[episode % len(self.answers)]
            ids = self.tokenizer.encode(answer, add_special_tokens=False)
            return ids + [self.eos], "stop"
        kind, kept = self.kind(turn), self.kept(episode, turn)
        if kind == "cut":
            return kept, "length"
        if kind == "oov":
            spliced = kept[:1] + self.oov[:1] + kept[1:3] + self.oov + kept[3:]
            return spliced + [self.eos], "stop"
        if kind == "all_oov":
            return self.oov + [self.eos], "stop"
        return kept + [self.pad if kind == "pad" else self.eos], "stop"

"""The fake inference engine of the workflow tests, and the script it can follow."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from areal.api.io_struct import ModelResponse


@dataclass
class Call:
    """One request a `FakeEngine` answered: what it was asked and what it said."""

    episode: int
    turn: int
    input_ids: list[int]
    gconfig: object
    max_new_tokens: int
    output_ids: list[int]
    stop_reason: str
    logprobs: list[float]
    versions: list[int]
    latency: float


class FakeEngine:
    """Answers every request at once and records every call, per episode and turn.

    What it writes, one of:

    - ``answer_for`` (with ``tokenizer``): a memory turn gets
      ``memory_tokens(call)`` and the final turn (told by its budget,
      ``final_budget``) the encoding of ``answer_for(episode)``, cut to the
      turn's budget, then EOS; stop_reason "stop".
    - ``script(episode, turn) -> (output_ids, stop_reason)``: exactly that
      (e.g. a `MemoryScript`).

    Episodes are numbered in the order of their first request (the workflow
    names each in ``metadata["episode"]``; a group's share one rid, AReaL's
    routing key), turns from 0 within an episode. Every generated
    token gets its own logprob and version (or every one ``version``, if given)
    and every call its own latency, so a row or a metric that shifts, swaps or
    mixes them up shows.

    Failures: the first ``failures`` calls raise the way AReaL's client gives up
    on one (before the call counts for an episode); every call of an episode in
    ``fail_for`` raises; ``fail_at={episode: turn}`` raises at that turn.
    """

    final_budget = 64

    def __init__(
        self,
        tokenizer=None,
        answer_for=None,
        *,
        script=None,
        version: int | None = None,
        fail_for=(),
        fail_at: dict[int, int] | None = None,
        failures: int = 0,
    ):
        if (answer_for is None) == (script is None):
            raise TypeError("FakeEngine: give answer_for (with tokenizer) or script")
        self.tokenizer = tokenizer
        self.answer_for = answer_for
        self.script = script
        self.version = version
        self.fail_for = set(fail_for)
        self.fail_at = dict(fail_at or {})
        self.failures = failures
        self.attempts = 0
        self.calls: list[Call] = []
        self.episodes: dict[str, int] = {}
        self.turns: dict[int, int] = {}
        if answer_for is not None:
            self.word_ids = tokenizer.encode(" memo", add_special_tokens=False)

    def get_version(self) -> int:
        return self.version or 0

    @property
    def requests(self) -> list[tuple[int, list[int], object]]:
        """``(episode, input_ids, gconfig)`` of every call, in the order answered."""
        return [(c.episode, c.input_ids, c.gconfig) for c in self.calls]

    def memory_tokens(self, call: int) -> list[int]:
        return self.word_ids * (1 + call % 3)

    def answer(self, episode: int, max_new_tokens: int) -> list[int]:
        """What ``answer_for`` mode writes (``len(self.calls)`` calls before)."""
        if max_new_tokens == self.final_budget:
            out = self.tokenizer.encode(
                self.answer_for(episode), add_special_tokens=False
            )
        else:
            out = self.memory_tokens(len(self.calls) + 1)
        return out[: max_new_tokens - 1] + [self.tokenizer.eos_token_id]

    async def agenerate(self, req) -> ModelResponse:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise RuntimeError("Failed after 3 retries each. Last error: reset")
        await asyncio.sleep(0)  # let the episodes of a group interleave
        key = req.metadata.get("episode", req.rid)  # a group's episodes share a rid
        episode = self.episodes.setdefault(key, len(self.episodes))
        if episode in self.fail_for:
            raise RuntimeError(f"engine failure in episode {episode}")
        turn = self.turns[episode] = self.turns.get(episode, -1) + 1
        if self.fail_at.get(episode) == turn:
            raise RuntimeError(f"scripted failure: episode {episode}, turn {turn}")
        max_new = req.gconfig.max_new_tokens
        if self.script is None:
            out, stop_reason = self.answer(episode, max_new), "stop"
        else:
            out, stop_reason = self.script(episode, turn)
        n = len(self.calls)
        # k / 4096 is exact in float32, so logprobs compare with ==
        logprobs = [-(1 + 64 * n + i) / 4096 for i in range(len(out))]
        if self.version is None:
            versions = [3 + episode + turn + i // 2 for i in range(len(out))]
        else:
            versions = [self.version] * len(out)
        call = Call(
            episode=episode,
            turn=turn,
            input_ids=list(req.input_ids),
            gconfig=req.gconfig,
            max_new_tokens=max_new,
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
    """A `FakeEngine` script whose every turn is a case with a known outcome.

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


def ask_workflow(model_dir, chunk_tokens: int = 40):
    """The episode a service test runs against `FakeEngine`: the tiny model's
    tokenizer, a 16-token memory, the fake's final budget, no retry window."""
    from areal.api.cli_args import GenerationHyperparameters

    from memagent_workflow.eval.ask import AskWorkflow

    return AskWorkflow(
        gconfig=GenerationHyperparameters(max_tokens=4096),
        tokenizer=str(model_dir),
        chunk_tokens=chunk_tokens,
        max_memory_tokens=16,
        max_final_tokens=FakeEngine.final_budget,
        engine_retry_s=0,
        trace=True,
    )

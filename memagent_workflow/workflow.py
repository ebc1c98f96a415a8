"""MemAgent as an AReaL rollout workflow.

One task = one question = one GRPO group. The document is tokenised once and
cut into chunks; ``group_size`` episodes then run concurrently. An episode
reads the chunks in order, each turn overwriting a bounded memory, and finally
answers from the memory alone. Every model call is its own training row, and
every row of an episode carries that episode's group advantage.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from functools import lru_cache
from typing import Any

import numpy as np
import torch
from areal import workflow_context
from areal.api import InferenceEngine, ModelRequest, ModelResponse, RolloutWorkflow
from areal.api.cli_args import GenerationHyperparameters
from areal.utils import logging, stats_tracker
from transformers import PreTrainedTokenizerFast

from memagent_workflow.advantage import group_advantages
from memagent_workflow.chunking import chunk_views
from memagent_workflow.context import aencode_context
from memagent_workflow.data.files import DataError
from memagent_workflow.episode import Document, Episode, parse_item
from memagent_workflow.prompt_file import as_prompt_texts, check_fit
from memagent_workflow.prompts import PromptTexts
from memagent_workflow.recovery.ledger import INDEX_KEY
from memagent_workflow.reward import (
    exact_match,
    extract_boxed,
    f1,
    reward_function,
    sub_em,
)
from memagent_workflow.rows import Turn, pad_rows
from memagent_workflow.tied_groups import TIED_KEY, tied_flags

logger = logging.getLogger("MemAgentWorkflow")


def load_tokenizer(path: str) -> PreTrainedTokenizerFast:
    """AReaL's tokenizer loader (cached by AReaL: workers rebuild the workflow per task)."""
    from areal.utils.hf_utils import load_hf_tokenizer

    return load_hf_tokenizer(path)


@lru_cache(maxsize=4)
def vocab_size(tokenizer: PreTrainedTokenizerFast) -> int:
    """``len(tokenizer)``, cached: it costs ~10 ms for a large vocabulary."""
    return len(tokenizer)


class MemAgentWorkflow(RolloutWorkflow):
    """Chunk-by-chunk memory overwrite, then an answer from memory alone."""

    def __init__(
        self,
        gconfig: GenerationHyperparameters,
        tokenizer: str | PreTrainedTokenizerFast,
        chunk_tokens: int = 5000,
        max_memory_tokens: int = 1024,
        max_final_tokens: int = 1024,
        max_chunks: int | None = None,
        group_size: int = 16,
        adv_std_norm: bool = False,
        train_final_turn: bool = True,
        train_memory_turns: bool = True,
        initial_memory: str = "No previous memory",
        engine_retry_s: float = 60.0,
        reward: str = "original",
        prompts: PromptTexts | dict[str, str] | str | None = None,
    ):
        """``prompts``: template texts (as ``workflow_kwargs`` passes them), a
        prompts file, or None for the built-in wording; ``reward``: a name in
        ``memagent_workflow.reward.REWARDS``."""
        if isinstance(tokenizer, str):
            tokenizer = load_tokenizer(tokenizer)
        for name, value in [
            ("chunk_tokens", chunk_tokens),
            ("max_memory_tokens", max_memory_tokens),
            ("max_final_tokens", max_final_tokens),
            ("group_size", group_size),
        ]:
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if max_chunks is not None and max_chunks < 1:
            raise ValueError(f"max_chunks must be >= 1 or None, got {max_chunks}")
        if engine_retry_s < 0:
            raise ValueError(f"engine_retry_s must be >= 0, got {engine_retry_s}")
        if not (train_memory_turns or train_final_turn):
            raise ValueError("train_memory_turns and train_final_turn are both False")
        self.tokenizer = tokenizer
        self.gconfig = gconfig.new_with_stop_and_pad_token_ids(tokenizer)
        self.chunk_tokens = chunk_tokens
        self.max_chunks = max_chunks
        self.group_size = group_size
        self.adv_std_norm = adv_std_norm
        self.train_final_turn = train_final_turn
        self.train_memory_turns = train_memory_turns
        self.engine_retry_s = engine_retry_s
        self.memory_gconfig = self.gconfig.new(
            n_samples=1, max_new_tokens=max_memory_tokens
        )
        self.final_gconfig = self.gconfig.new(
            n_samples=1, max_new_tokens=max_final_tokens
        )
        self.initial_memory = np.asarray(
            tokenizer.encode(initial_memory, add_special_tokens=False), dtype=np.int32
        )
        # AReaL adds the pad id, None for a tokenizer without a pad token.
        self.stop_ids = {int(t) for t in self.gconfig.stop_token_ids if t is not None}
        self.vocab_limit = vocab_size(tokenizer)
        self.reward_fn = reward_function(reward)
        self.prompts = as_prompt_texts(prompts)
        check_fit(
            tokenizer,
            self.prompts,
            chunk_tokens=chunk_tokens,
            max_memory_tokens=max_memory_tokens,
            max_final_tokens=max_final_tokens,
            max_tokens=self.gconfig.max_tokens,
            initial_memory_tokens=len(self.initial_memory),
        )

    # ------------------------------------------------------------------ the task
    async def arun_episode(
        self, engine: InferenceEngine, data: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Run one GRPO group over one question and return its training rows."""
        try:
            doc = await self.read_document(data)
        except DataError as exc:  # e.g. a data set edited after preparation
            logger.warning(f"{exc}; group rejected")
            tracker = stats_tracker.get(workflow_context.stat_scope())
            tracker.scalar(**{"memagent/item_rejected": 1.0})
            return None
        started = [Episode() for _ in range(self.group_size)]
        results = await asyncio.gather(
            *(self.run_episode(engine, doc, ep=ep) for ep in started),
            return_exceptions=True,
        )
        episodes = [r for r in results if isinstance(r, Episode)]
        for err in (r for r in results if isinstance(r, BaseException)):
            logger.warning(f"episode of item {doc.id} failed: {err!r:.500}")
        retried = sum(ep.retried_calls for ep in started)
        if not episodes:
            logger.warning(f"item {doc.id}: every episode failed; group rejected")
            stats_tracker.get(workflow_context.stat_scope()).scalar(
                **{
                    "memagent/episodes_failed": float(len(results)),
                    "memagent/calls_retried": float(retried),
                }
            )
            return None

        rewards = [self.reward_fn(e.answer, doc.answers) for e in episodes]
        advantages = group_advantages(rewards, std_norm=self.adv_std_norm)
        self.log_group(doc, episodes, rewards, failed=len(results) - len(episodes))
        stats_tracker.get(workflow_context.stat_scope()).scalar(
            **{"memagent/calls_retried": float(retried)}
        )

        turns = [t for e in episodes for t in e.turns]
        row_advantages = self.row_advantages(episodes, advantages)
        # Padding a long group's rows takes 100+ ms; off the loop, so other
        # episodes' turns keep flowing meanwhile (see bench/results.md).
        rows = await asyncio.to_thread(pad_rows, turns, row_advantages)
        rows[TIED_KEY] = tied_flags(len(turns), row_advantages)  # tied_groups.py
        if INDEX_KEY in data:  # which question these rows train (see recovery/)
            rows[INDEX_KEY] = torch.full(
                (len(turns),), int(data[INDEX_KEY]), dtype=torch.int64
            )
        return rows

    def row_advantages(
        self, episodes: list[Episode], advantages: list[float]
    ) -> list[float]:
        """One advantage per row: every turn of an episode gets the episode's."""
        return [a for e, a in zip(episodes, advantages, strict=True) for _ in e.turns]

    async def read_document(self, data: dict[str, Any]) -> Document:
        """Tokenise the context once (off the event loop) and cut it into chunks."""
        item_id, question, context, answers = parse_item(data)
        ids = await aencode_context(self.tokenizer, context)
        chunks, truncated = chunk_views(ids, self.chunk_tokens, self.max_chunks)
        return Document(
            id=item_id,
            question=question,
            answers=answers,
            chunks=chunks,
            context_tokens=len(ids),
            truncated_tokens=truncated,
            memory_prompt=self.prompts.memory_template(self.tokenizer, question),
            final_prompt=self.prompts.final_template(self.tokenizer, question),
        )

    # --------------------------------------------------------------- one episode
    async def run_episode(
        self,
        engine: InferenceEngine,
        doc: Document,
        keep_turns: bool = True,
        ep: Episode | None = None,
    ) -> Episode:
        """Read every chunk into memory, then answer from the memory alone.

        ``ep``: the episode to fill (its counters stay readable if this raises).
        """
        ep = Episode() if ep is None else ep
        rid = uuid.uuid4().hex  # one rid: every turn of the episode on one server
        memory = self.initial_memory
        for chunk in doc.chunks:
            prompt = doc.memory_prompt.build(memory, chunk)
            turn = await self.generate(
                engine,
                rid,
                prompt,
                self.memory_gconfig,
                ep,
                trainable=self.train_memory_turns,
            )
            memory = self.next_memory(turn, ep)
            self.account(ep, turn, keep_turns)
        prompt = doc.final_prompt.build(memory)
        turn = await self.generate(
            engine, rid, prompt, self.final_gconfig, ep, trainable=self.train_final_turn
        )
        self.account(ep, turn, keep_turns)
        ep.answer = self.tokenizer.decode(
            self.strip_stop(turn.output_ids), skip_special_tokens=True
        )
        ep.final_stop_reason = turn.stop_reason
        return ep

    async def generate(
        self,
        engine: InferenceEngine,
        rid: str,
        prompt: np.ndarray,
        gconfig: GenerationHyperparameters,
        ep: Episode,
        trainable: bool = True,
    ) -> Turn:
        """One model call; refuses rather than lets the engine shorten the turn.

        SGLang answers 400 unless prompt + max_new_tokens < its context length,
        which the configs set to ``gconfig.max_tokens``: the same rule here, so a
        turn SGLang would reject is refused before it is sent (AReaL would retry
        it and lose the episode).
        """
        if len(prompt) + gconfig.max_new_tokens >= gconfig.max_tokens:
            raise ValueError(
                f"a prompt of {len(prompt)} tokens plus {gconfig.max_new_tokens} new "
                f"tokens reaches gconfig.max_tokens={gconfig.max_tokens} (SGLang "
                "needs prompt + max_new_tokens < sglang.context_length = "
                "gconfig.max_tokens); raise gconfig.max_tokens and "
                "sglang.context_length or lower memagent.chunk_tokens"
            )
        req = ModelRequest(
            rid=rid,
            input_ids=prompt.tolist(),
            gconfig=gconfig,
            tokenizer=self.tokenizer,
        )
        resp = await self.call_engine(engine, req, ep)
        return Turn.from_response(prompt, resp, trainable=trainable)

    async def call_engine(
        self, engine: InferenceEngine, req: ModelRequest, ep: Episode
    ) -> ModelResponse:
        """``engine.agenerate(req)``, made again until ``engine_retry_s`` has passed.

        AReaL's client retries an HTTP call a few times, a second apart; a server
        that restarts, or answers errors for longer, would fail the episode and,
        with all its episodes, the group, after which AReaL pulls the next
        question at once. Waiting out the outage here loses nothing instead.
        """
        delay, deadline = min(0.5, self.engine_retry_s / 8), None
        while True:
            try:
                return await engine.agenerate(req)
            except Exception as exc:
                now = time.monotonic()
                deadline = deadline or now + self.engine_retry_s
                if now >= deadline:
                    raise
                ep.retried_calls += 1
                logger.warning(
                    f"model call failed ({exc!r:.300}); again in {delay:.1f}s"
                )
                await asyncio.sleep(min(delay, deadline - now))
                delay = min(2 * delay, 8.0)

    def next_memory(self, turn: Turn, ep: Episode) -> np.ndarray:
        """The memory for the next turn: exactly the tokens just generated.

        A memory cut off by the token limit is kept as it is (as the original
        MemAgent does). Stop tokens are dropped; ids outside the tokenizer's
        vocabulary (possible with padded embedding tables) are dropped too, so
        they never reach a prompt. An empty memory falls back to the initial
        memory text, so the next prompt still reads as intended.
        """
        memory = self.strip_stop(turn.output_ids)
        memory = memory[memory < self.vocab_limit]
        ep.memory_turns += 1
        ep.memory_tokens += len(memory)
        ep.memory_hit_limit += int(turn.stop_reason == "length")
        if len(memory) == 0:
            ep.memory_empty += 1
            return self.initial_memory
        return memory

    def strip_stop(self, ids: np.ndarray) -> np.ndarray:
        end = len(ids)
        while end > 0 and int(ids[end - 1]) in self.stop_ids:
            end -= 1
        return ids[:end]

    @staticmethod
    def account(ep: Episode, turn: Turn, keep_turns: bool) -> None:
        ep.output_tokens += len(turn.output_ids)
        ep.latency += turn.latency
        if len(turn.versions):
            oldest = int(turn.versions.min())
            if ep.oldest_version is None or oldest < ep.oldest_version:
                ep.oldest_version = oldest
        if keep_turns:
            ep.turns.append(turn)

    # ------------------------------------------------------------------ metrics
    def log_group(
        self, doc: Document, episodes: list[Episode], rewards: list[float], failed: int
    ) -> None:
        """Per-group metrics under the workflow's stat scope (rollout/eval-rollout)."""
        tracker = stats_tracker.get(workflow_context.stat_scope())
        n_calls = sum(e.memory_turns + 1 for e in episodes)
        memory_turns = sum(e.memory_turns for e in episodes)
        boxed = [extract_boxed(e.answer) for e in episodes]
        preds = [b or "" for b in boxed]
        stats = {
            "reward": float(np.mean(rewards)),
            "n_chunks": len(doc.chunks),
            "context_tokens": doc.context_tokens,
            "truncated_context_tokens": doc.truncated_tokens,
            "final_boxed": np.mean([b is not None for b in boxed]),
            "sub_em": np.mean([sub_em(p, doc.answers) for p in preds]),
            "em": np.mean([exact_match(p, doc.answers) for p in preds]),
            "f1": np.mean([f1(p, doc.answers) for p in preds]),
            "turn_latency_s": sum(e.latency for e in episodes) / n_calls,
            "episodes_failed": failed,
            "item_rejected": 0.0,  # 1.0 where a malformed item was rejected
            "rows": sum(len(e.turns) for e in episodes),
        }
        versions = [e.oldest_version for e in episodes if e.oldest_version is not None]
        if versions:
            stats["oldest_version"] = min(versions)
        if memory_turns:
            stats["memory_tokens"] = (
                sum(e.memory_tokens for e in episodes) / memory_turns
            )
            stats["memory_hit_limit"] = (
                sum(e.memory_hit_limit for e in episodes) / memory_turns
            )
            stats["memory_empty"] = sum(e.memory_empty for e in episodes) / memory_turns
        tracker.scalar(**{f"memagent/{k}": float(v) for k, v in stats.items()})

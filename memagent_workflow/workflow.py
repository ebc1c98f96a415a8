"""MemAgent as an AReaL rollout workflow.

One task = one question = one GRPO group. The document is tokenised once and
cut into chunks; ``group_size`` episodes then run concurrently. An episode
reads the chunks in order, each turn overwriting a bounded memory, and finally
answers from the memory alone. Every model call is its own training row, and
every row of an episode carries that episode's group advantage.
"""

from __future__ import annotations

import asyncio
import uuid
from functools import lru_cache
from typing import Any

import numpy as np
import torch
from areal.api import InferenceEngine, ModelRequest, RolloutWorkflow
from areal.api.cli_args import GenerationHyperparameters
from areal.utils import logging
from transformers import PreTrainedTokenizerFast

from memagent_workflow.advantage import group_advantages
from memagent_workflow.chunking import chunk_views
from memagent_workflow.config import MemAgentConfig
from memagent_workflow.context import aencode_context, check_fit
from memagent_workflow.data.files import DataError
from memagent_workflow.engine_calls import agenerate_with_retry, check_context_length
from memagent_workflow.episode import Document, Episode, parse_item
from memagent_workflow.metrics import log_group, log_scalars
from memagent_workflow.prompts import PromptTexts, as_prompt_texts
from memagent_workflow.reward import reward_function
from memagent_workflow.rows import (
    INDEX_KEY,
    TIED_KEY,
    Turn,
    pad_rows,
    shared_prompt_tokens,
    tied_flags,
)

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
        prompts: PromptTexts | dict[str, str] | str | None = None,
        **settings: Any,
    ):
        """``settings``: the ``memagent:`` knobs (``MemAgentConfig``'s fields but
        ``prompts``), checked there; ``prompts``: template texts (as
        ``workflow_kwargs`` passes them), a prompts file, or None for the
        built-in wording."""
        cfg = MemAgentConfig(**settings)  # refuses a bad knob, naming it
        if isinstance(tokenizer, str):
            tokenizer = load_tokenizer(tokenizer)
        self.tokenizer = tokenizer
        self.gconfig = gconfig.new_with_stop_and_pad_token_ids(tokenizer)
        self.chunk_tokens = cfg.chunk_tokens
        self.max_chunks = cfg.max_chunks
        self.group_size = cfg.group_size
        self.adv_std_norm = cfg.adv_std_norm
        self.train_final_turn = cfg.train_final_turn
        self.train_memory_turns = cfg.train_memory_turns
        self.engine_retry_s = cfg.engine_retry_s
        self.wipe_memory = cfg.wipe_memory  # an ablation: memory never carries
        self.keep_empty_memory = cfg.empty_memory == "keep"
        self.memory_gconfig = self.gconfig.new(
            n_samples=1, max_new_tokens=cfg.max_memory_tokens
        )
        self.final_gconfig = self.gconfig.new(
            n_samples=1, max_new_tokens=cfg.max_final_tokens
        )
        self.initial_memory = np.asarray(
            tokenizer.encode(cfg.initial_memory, add_special_tokens=False),
            dtype=np.int32,
        )
        # AReaL adds the pad id, None for a tokenizer without a pad token.
        self.stop_ids = {int(t) for t in self.gconfig.stop_token_ids if t is not None}
        self.vocab_limit = vocab_size(tokenizer)
        self.reward_fn = reward_function(cfg.reward, cfg.answer_protocol)
        self.answer_protocol = cfg.answer_protocol  # boxed | answer_is
        self.prompt_build = cfg.prompt_build  # tokens | text
        self.prompts = as_prompt_texts(prompts, cfg.answer_protocol)
        check_fit(
            tokenizer,
            self.prompts,
            chunk_tokens=cfg.chunk_tokens,
            max_memory_tokens=cfg.max_memory_tokens,
            max_final_tokens=cfg.max_final_tokens,
            max_tokens=self.gconfig.max_tokens,
            initial_memory_tokens=len(self.initial_memory),
            build=self.prompt_build,
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
            log_scalars(item_rejected=1.0)
            return None
        started = [Episode() for _ in range(self.group_size)]
        # One rid for the group: AReaL's client sends every request of a rid to
        # one server (the rid is its routing key, not sent to the server), so
        # the group's prompts meet in that server's prefix cache.
        rid = uuid.uuid4().hex
        results = await asyncio.gather(
            *(self.run_episode(engine, doc, ep=ep, rid=rid) for ep in started),
            return_exceptions=True,
        )
        episodes = [r for r in results if isinstance(r, Episode)]
        for err in (r for r in results if isinstance(r, BaseException)):
            logger.warning(f"episode of item {doc.id} failed: {err!r:.500}")
        retried = sum(ep.retried_calls for ep in started)
        if not episodes:
            logger.warning(f"item {doc.id}: every episode failed; group rejected")
            log_scalars(episodes_failed=len(results), calls_retried=retried)
            return None

        rewards = [self.reward_fn(e.answer, doc.answers) for e in episodes]
        advantages = group_advantages(rewards, std_norm=self.adv_std_norm)
        log_group(
            doc,
            episodes,
            rewards,
            failed=len(results) - len(episodes),
            protocol=self.answer_protocol,
        )
        log_scalars(calls_retried=retried)

        turns = [t for e in episodes for t in e.turns]
        # prompt tokens a prefix cache (or AReaL's tree training) could share
        prompts, shared = await asyncio.to_thread(shared_prompt_tokens, turns)
        log_scalars(prompt_tokens=prompts, prompt_tokens_shared=shared)
        row_advantages = self.row_advantages(episodes, advantages)
        # Padding a long group's rows takes 100+ ms; off the loop, so other
        # episodes' turns keep flowing meanwhile (see bench/results.md).
        rows = await asyncio.to_thread(pad_rows, turns, row_advantages)
        rows[TIED_KEY] = tied_flags(len(turns), row_advantages)  # see rows.py
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
            memory_prompt=self.prompts.memory_template(
                self.tokenizer, question, self.prompt_build
            ),
            final_prompt=self.prompts.final_template(
                self.tokenizer, question, self.prompt_build
            ),
        )

    # --------------------------------------------------------------- one episode
    async def run_episode(
        self,
        engine: InferenceEngine,
        doc: Document,
        keep_turns: bool = True,
        ep: Episode | None = None,
        rid: str | None = None,
    ) -> Episode:
        """Read every chunk into memory, then answer from the memory alone.

        ``ep``: the episode to fill (its counters stay readable if this raises).
        """
        ep = Episode() if ep is None else ep
        # one rid: every turn of the episode (``rid``: of its group) on one server
        rid = uuid.uuid4().hex if rid is None else rid
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
            if self.wipe_memory:
                memory = self.initial_memory
            ep.add_turn(turn, keep=keep_turns)
        prompt = doc.final_prompt.build(memory)
        turn = await self.generate(
            engine, rid, prompt, self.final_gconfig, ep, trainable=self.train_final_turn
        )
        ep.add_turn(turn, keep=keep_turns)
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
        """One model call (refused before it is sent if SGLang would refuse it)."""
        check_context_length(len(prompt), gconfig)
        req = ModelRequest(
            rid=rid,
            input_ids=prompt.tolist(),
            gconfig=gconfig,
            tokenizer=self.tokenizer,
            metadata={"episode": ep.id},
        )
        resp = await agenerate_with_retry(engine, req, self.engine_retry_s, ep)
        return Turn.from_response(prompt, resp, trainable=trainable)

    def next_memory(self, turn: Turn, ep: Episode) -> np.ndarray:
        """The memory for the next turn: exactly the tokens just generated.

        A memory cut off by the token limit is kept as it is (as the original
        MemAgent does). Stop tokens are dropped; ids outside the tokenizer's
        vocabulary (possible with padded embedding tables) are dropped too, so
        they never reach a prompt. An empty memory (``memagent.empty_memory``)
        is passed on as it is (``keep``: the next prompt's memory slot holds
        nothing) or replaced by the initial memory (``initial``).
        """
        memory = self.strip_stop(turn.output_ids)
        memory = memory[memory < self.vocab_limit]
        ep.add_memory(memory, turn)
        if len(memory) or self.keep_empty_memory:
            return memory
        return self.initial_memory

    def strip_stop(self, ids: np.ndarray) -> np.ndarray:
        end = len(ids)
        while end > 0 and int(ids[end - 1]) in self.stop_ids:
            end -= 1
        return ids[:end]

"""The model's side of the stand-in engine's continuous batching: a new request
is prefilled alone (which samples its first token), then decoded with the
running batch, one token per request per step. ``StandinEngine`` runs these
steps in its worker thread and sets the attributes they read.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from transformers import DynamicCache

from standin.lora import LoraAdapters
from standin.model import KVBatch
from standin.protocol import GenRequest, sample_token

logger = logging.getLogger("StandinEngine")


class ContinuousBatching:
    """Prefill and decode steps over the served model (``StandinEngine``'s base)."""

    model: Any
    tokenizer: Any
    lora: LoraAdapters | None
    generator: torch.Generator
    eos_ids: set[int]
    context_length: int
    _batch: KVBatch

    def _prefill(self, req: GenRequest) -> None:
        if req.cancelled:
            return
        if req.params.max_new_tokens == 0 and req.logprob_start_len < 0:
            req.finish({"type": "length", "length": 0})
            return
        ids = torch.tensor([req.input_ids], dtype=torch.long)
        cache = DynamicCache()
        want_input_lp = req.return_logprob and req.logprob_start_len >= 0
        out = self._forward(
            [req],
            input_ids=ids,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=0 if want_input_lp else 1,
        )
        logits = out.logits[0].float()
        if want_input_lp:
            req.set_input_logprobs(torch.log_softmax(logits[:-1], dim=-1))
        if req.params.max_new_tokens == 0:
            req.finish({"type": "length", "length": 0})
            return
        if self._emit(req, logits[-1]):
            self._batch.add(req, cache)

    def _forward(self, rows: list[GenRequest], **kwargs: Any) -> Any:
        """The served model on ``rows``, each through its LoRA adapter if any."""
        if self.lora is None:
            return self.model(**kwargs)
        return self.lora.forward(rows, **kwargs)

    def _emit(self, req: GenRequest, logits: torch.Tensor) -> bool:
        """Sample one token for ``req``; finish it if done. True if still running."""
        gen = req.generator or self.generator
        tok, lp = sample_token(logits, req.params, gen, req.output_counts())
        req.append(tok, lp)
        reason = req.check_finished(self.eos_ids, self.context_length, self.tokenizer)
        if reason is not None:
            req.finish(reason)
            return False
        return True

    def _decode_step(self) -> None:
        b = self._batch
        assert b.mask is not None
        keep_mask = torch.ones(len(b.rows), 1, dtype=torch.long)
        b.mask = torch.cat([b.mask, keep_mask], dim=1)
        last = torch.tensor([[r.output_ids[-1]] for r in b.rows], dtype=torch.long)
        pos = torch.tensor([[b.length - 1 - p] for p in b.pad], dtype=torch.long)
        out = self._forward(
            b.rows,
            input_ids=last,
            attention_mask=b.mask,
            position_ids=pos,
            past_key_values=b.cache,
            use_cache=True,
        )
        logits = out.logits[:, -1].float()
        keep = []
        for i, r in enumerate(b.rows):
            if r.cancelled:
                continue
            try:
                if self._emit(r, logits[i]):
                    keep.append(i)
            except Exception as e:
                logger.error(f"Request {r.rid} failed: {e!r}")
                r.fail(e)
        b.keep(keep)

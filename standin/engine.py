"""Generation core of the CPU stand-in server (see ``local_server``).

A single worker thread owns a Hugging Face causal LM and runs continuous
batching: each new request is prefilled alone (which samples its first
token), then joins a left-padded batch whose KV cache is shared; every decode
step advances all running requests by one token. Control commands (pause,
weight reload) run in the same thread between steps, so the model is never
used concurrently. Test/CPU use only; this is not a production engine.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import torch
from transformers import AutoTokenizer, DynamicCache

from standin.model import KVBatch, load_model
from standin.protocol import GenRequest, sample_token

logger = logging.getLogger("StandinEngine")


class StandinEngine:
    """Worker-thread generation engine with continuous batching."""

    def __init__(
        self,
        model_path: str | Path,
        seed: int = 0,
        max_batch_size: int = 32,
        max_prefills_per_step: int = 4,
    ) -> None:
        self.model_path = str(model_path)
        self.model = load_model(model_path)
        cfg = self.model.config
        self.vocab_size = int(cfg.vocab_size)
        self.max_len = int(getattr(cfg, "max_position_embeddings", 1 << 30))
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        except Exception as e:  # a weights-only dir still serves token ids
            logger.warning(f"No tokenizer in {self.model_path} ({e}); text is ''")
            self.tokenizer = None
        self.eos_ids = self._eos_ids()
        self.generator = torch.Generator().manual_seed(seed)
        self.max_batch_size = max_batch_size
        self.max_prefills_per_step = max_prefills_per_step
        self.n_updates = 0
        self.paused = False
        self._cv = threading.Condition()
        self._pending: deque[GenRequest] = deque()
        self._commands: deque[tuple[Callable[[], Any], Future]] = deque()
        self._batch = KVBatch()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="engine", daemon=True)

    def _eos_ids(self) -> set[int]:
        ids: set[int] = set()
        for src in (self.model.config, getattr(self.model, "generation_config", None)):
            eos = getattr(src, "eos_token_id", None)
            ids.update([eos] if isinstance(eos, int) else list(eos or []))
        if self.tokenizer is not None and self.tokenizer.eos_token_id is not None:
            ids.add(int(self.tokenizer.eos_token_id))
        return ids

    # ---- thread-safe API -------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        self._thread.join(timeout)

    def submit(self, req: GenRequest) -> None:
        """Queue a request; ``req.on_done`` is called from the worker thread."""
        with self._cv:
            self._pending.append(req)
            self._cv.notify_all()

    def run_command(self, fn: Callable[[], Any]) -> Future:
        """Run ``fn`` in the worker thread between steps."""
        fut: Future = Future()
        with self._cv:
            self._commands.append((fn, fut))
            self._cv.notify_all()
        return fut

    def pause(self) -> Future:
        """Stop admitting requests and abort running ones (they return so far)."""
        with self._cv:
            self.paused = True
        return self.run_command(lambda: self._abort_running("Aborted by pause"))

    def resume(self) -> None:
        with self._cv:
            self.paused = False
            self._cv.notify_all()

    def update_weights(self, path: str, abort: bool) -> Future:
        """Reload weights from an HF directory (same architecture)."""

        def _do() -> str:
            if abort:
                self._abort_running("Aborted by weight update")
            new = load_model(path, attn="sdpa")
            self.model.load_state_dict(new.state_dict(), strict=True)
            self.n_updates += 1
            self.model_path = str(path)
            return f"Loaded weights from {path} (update #{self.n_updates})"

        return self.run_command(_do)

    def counts(self) -> dict[str, int]:
        with self._cv:
            return {"running": len(self._batch.rows), "waiting": len(self._pending)}

    # ---- worker thread ---------------------------------------------------
    def _loop(self) -> None:
        torch.set_num_threads(1)
        with torch.inference_mode():
            while True:
                with self._cv:
                    while not (
                        self._stopping
                        or self._commands
                        or (self._pending and not self.paused)
                        or (self._batch.rows and not self.paused)
                    ):
                        self._cv.wait()
                    if self._stopping:
                        break
                    commands = list(self._commands)
                    self._commands.clear()
                    admit: list[GenRequest] = []
                    room = self.max_batch_size - len(self._batch.rows)
                    n = min(room, self.max_prefills_per_step)
                    while not self.paused and self._pending and len(admit) < n:
                        admit.append(self._pending.popleft())
                for fn, fut in commands:
                    try:
                        fut.set_result(fn())
                    except Exception as e:
                        logger.warning(f"Command failed: {e!r}")
                        fut.set_exception(e)
                for req in admit:
                    self._guarded(req, self._prefill)
                if self._batch.rows and not self.paused:
                    try:
                        self._decode_step()
                    except Exception as e:
                        logger.error(f"Decode step failed: {e!r}")
                        for r in self._batch.rows:
                            r.fail(e)
                        self._batch.keep([])
            self._abort_running("Server shutting down")
            with self._cv:
                rest = list(self._pending)
                self._pending.clear()
            for r in rest:
                r.finish({"type": "abort", "message": "Abort before prefill: shutdown"})

    def _guarded(self, req: GenRequest, fn: Callable[[GenRequest], None]) -> None:
        try:
            fn(req)
        except Exception as e:
            logger.error(f"Request {req.rid} failed: {e!r}")
            req.fail(e)

    def _abort_running(self, message: str) -> int:
        rows = self._batch.rows
        for r in rows:
            r.finish({"type": "abort", "message": message})
        self._batch.keep([])
        return len(rows)

    def _prefill(self, req: GenRequest) -> None:
        if req.cancelled:
            return
        if req.params.max_new_tokens == 0 and req.logprob_start_len < 0:
            req.finish({"type": "length", "length": 0})
            return
        ids = torch.tensor([req.input_ids], dtype=torch.long)
        cache = DynamicCache()
        want_input_lp = req.return_logprob and req.logprob_start_len >= 0
        out = self.model(
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

    def _emit(self, req: GenRequest, logits: torch.Tensor) -> bool:
        """Sample one token for ``req``; finish it if done. True if still running."""
        gen = req.generator or self.generator
        tok, lp = sample_token(logits, req.params, gen, req.output_counts())
        req.append(tok, lp)
        reason = req.check_finished(self.eos_ids, self.max_len, self.tokenizer)
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
        out = self.model(
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

"""Generation core of the CPU stand-in server (see ``local_server``).

A single worker thread owns a Hugging Face causal LM and runs continuous
batching (its model steps: ``batching``): each new request is prefilled alone
(which samples its first token), then joins a left-padded batch whose KV cache
is shared; every decode step advances all running requests by one token.
Control commands (pause, weight reload) run in the same thread between steps,
so the model is never used concurrently. Test/CPU use only; this is not a
production engine.
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
from transformers import AutoTokenizer

from standin.batching import ContinuousBatching
from standin.lora import LoraAdapters
from standin.model import KVBatch, load_model
from standin.prefix_cache import PrefixCache
from standin.protocol import GenRequest
from standin.weight_log import WeightLog
from standin.xccl import load_tensors

# SGLang's pause modes: "abort" (its default) ends every request, running or
# queued; "in_place" and "retract" keep them and carry on after the resume
# (SGLang's retract recomputes their KV cache, invisible to a client).
PAUSE_MODES = ("abort", "in_place", "retract")
ABORT_RUNNING = "Aborted"  # SGLang's messages, as its clients may match them
ABORT_QUEUED = "Abort in waiting queue"

logger = logging.getLogger("StandinEngine")


class StandinEngine(ContinuousBatching):
    """Worker-thread generation engine with continuous batching."""

    def __init__(
        self,
        model_path: str | Path,
        seed: int = 0,
        max_batch_size: int = 32,
        max_prefills_per_step: int = 4,
        context_length: int | None = None,
        skip_tokenizer_init: bool = False,
    ) -> None:
        self.model_path = str(model_path)
        self.served_name = self.model_path  # vLLM's default served model name
        self.model = load_model(model_path)
        cfg = self.model.config
        self.vocab_size = int(cfg.vocab_size)
        derived = int(getattr(cfg, "max_position_embeddings", 1 << 30))
        if context_length is not None and context_length > derived:
            raise ValueError(
                f"context_length {context_length} is greater than the model's "
                f"max_position_embeddings {derived} (SGLang refuses this too)"
            )
        self.context_length = context_length or derived
        # Under skip_tokenizer_init SGLang loads no tokenizer: it returns no text
        # and cannot match stop strings. The stand-in still reads the tokenizer's
        # eos id, and its server drops `text` and refuses stop strings.
        self.skip_tokenizer_init = skip_tokenizer_init
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        except Exception as e:  # a weights-only dir still serves token ids
            logger.warning(f"No tokenizer in {self.model_path} ({e}); text is ''")
            self.tokenizer = None
        self.eos_ids = self._eos_ids()
        self.generator = torch.Generator().manual_seed(seed)
        self.max_batch_size = max_batch_size
        self.max_prefills_per_step = max_prefills_per_step
        self.weights = WeightLog()
        self.prefix_cache = PrefixCache()  # meta_info.cached_tokens (prefix_cache.py)
        self.paused = False
        self._cv = threading.Condition()
        self._pending: deque[GenRequest] = deque()
        self._held: list[GenRequest] = []  # arrived while paused
        self._commands: deque[tuple[Callable[[], Any], Future]] = deque()
        self._batch = KVBatch()
        self.lora: LoraAdapters | None = None  # set by the server (standin.lora)
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
        """Queue a request; ``req.on_done`` is called from the worker thread.

        While paused, new requests are held until the resume, as SGLang holds
        them before they reach its scheduler (a pause never aborts them).
        """
        with self._cv:
            (self._held if self.paused else self._pending).append(req)
            self._cv.notify_all()

    @property
    def n_updates(self) -> int:
        """Weight syncs received (one per trainer step, see `WeightLog`)."""
        return self.weights.n_syncs

    def run_command(self, fn: Callable[[], Any]) -> Future:
        """Run ``fn`` in the worker thread between steps."""
        fut: Future = Future()
        with self._cv:
            self._commands.append((fn, fut))
            self._cv.notify_all()
        return fut

    def pause(self, mode: str = "abort") -> Future:
        """Stop generating; in "abort" mode end every request, running or queued.

        Aborted requests return what they generated so far, with
        ``finish_reason.type == "abort"``; AReaL resubmits the remainder.
        """
        if mode not in PAUSE_MODES:
            raise ValueError(f"pause mode {mode!r}: expected one of {PAUSE_MODES}")
        with self._cv:
            self.paused = True
        self.weights.paused()
        if mode != "abort":
            return self.run_command(lambda: 0)
        return self.run_command(self._abort_all)

    def resume(self) -> None:
        self.weights.resumed()
        with self._cv:
            self.paused = False
            self._pending.extend(self._held)
            self._held.clear()
            self._cv.notify_all()

    def update_weights(self, path: str, abort: bool) -> Future:
        """Reload weights from an HF directory (same architecture)."""

        def _do() -> str:
            if abort:
                self._abort_all()
            new = load_model(path, attn="sdpa")
            state = new.state_dict()
            self.model.load_state_dict(state, strict=True)
            self.prefix_cache.clear()  # new weights: SGLang's cache is flushed
            dtype = str(new.dtype).removeprefix("torch.")
            self.weights.record("disk", list(state), [dtype])
            self.model_path = str(path)
            return f"Loaded weights from {path}"

        return self.run_command(_do)

    def load_tensors(
        self, tensors: list[tuple[str, torch.Tensor]], abort: bool
    ) -> Future:
        """Copy received named tensors into the served model (between steps)."""

        def _do() -> str:
            if abort:
                self._abort_all()
            load_tensors(self.model, tensors)
            self.prefix_cache.clear()
            dtypes = sorted({str(t.dtype).removeprefix("torch.") for _, t in tensors})
            self.weights.record("distributed", [n for n, _ in tensors], dtypes)
            return f"Loaded {len(tensors)} tensors ({', '.join(dtypes)})"

        return self.run_command(_do)

    def counts(self) -> dict[str, int]:
        with self._cv:
            return {
                "running": len(self._batch.rows),
                "waiting": len(self._pending) + len(self._held),
            }

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
                rest = list(self._pending) + self._held
                self._pending.clear()
                self._held.clear()
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

    def _abort_all(self) -> int:
        """SGLang's abort-all: running requests, then the waiting queue."""
        n = self._abort_running(ABORT_RUNNING)
        with self._cv:
            queued = list(self._pending)
            self._pending.clear()
        for r in queued:
            r.finish({"type": "abort", "message": ABORT_QUEUED})
        return n + len(queued)

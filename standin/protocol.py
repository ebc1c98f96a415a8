"""SGLang ``/generate`` protocol pieces for the CPU stand-in server.

Request parsing, sampling parameters, per-request state, token sampling and
the response format.

Logprob convention (matches SGLang's default, i.e. without
``SGLANG_RETURN_ORIGINAL_LOGPROB``): the logprob returned for a sampled token
is ``log_softmax(logits / temperature)`` over the FULL vocabulary, taken
before any top-p/top-k filtering or renormalisation. AReaL's actor recomputes
``log_softmax(logits / actor.temperature)`` (areal/utils/functional/
vocab_parallel.py), so at equal temperatures the two agree. Greedy requests
(temperature 0) report ``log_softmax(logits)`` at temperature 1, as SGLang
does. A frequency penalty, when given, is applied to the logits first.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass
class SamplingParams:
    """The subset of SGLang ``sampling_params`` that the stand-in honours."""

    max_new_tokens: int = 128
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    stop_token_ids: list[int] = field(default_factory=list)
    stop: list[str] = field(default_factory=list)
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    frequency_penalty: float = 0.0
    sampling_seed: int | None = None
    # vLLM's default logprobs mode ("raw_logprobs"): the logprob of the raw
    # logits, before penalties and temperature (see ``standin.vllm_protocol``).
    raw_logprobs: bool = False

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> SamplingParams:
        """Parse and validate; raises ``ValueError`` on bad values."""
        d = dict(d or {})
        p = cls()
        try:
            if d.get("max_new_tokens") is not None:
                p.max_new_tokens = int(d["max_new_tokens"])
            if d.get("temperature") is not None:
                p.temperature = float(d["temperature"])
            if d.get("top_p") is not None:
                p.top_p = float(d["top_p"])
            if d.get("top_k") is not None:
                p.top_k = int(d["top_k"])
            # A null id (a tokenizer without a pad token, through AReaL's
            # new_with_stop_and_pad_token_ids) matches no token; SGLang keeps it.
            ids = d.get("stop_token_ids") or []
            p.stop_token_ids = [int(t) for t in ids if t is not None]
            stop = d.get("stop") or []
            p.stop = [stop] if isinstance(stop, str) else [str(s) for s in stop]
            p.ignore_eos = bool(d.get("ignore_eos", False))
            p.skip_special_tokens = bool(d.get("skip_special_tokens", True))
            p.frequency_penalty = float(d.get("frequency_penalty") or 0.0)
            if d.get("sampling_seed") is not None:
                p.sampling_seed = int(d["sampling_seed"])
        except (TypeError, ValueError) as e:
            raise ValueError(f"bad sampling_params: {e}") from e
        if p.max_new_tokens < 0:
            raise ValueError("max_new_tokens must be >= 0")
        if p.temperature < 0:
            raise ValueError("temperature must be >= 0")
        if not 0.0 < p.top_p <= 1.0:
            raise ValueError("top_p must be in (0, 1]")
        return p


def sample_token(
    logits: torch.Tensor,
    p: SamplingParams,
    gen: torch.Generator,
    counts: dict[int, int] | None = None,
) -> tuple[int, float]:
    """Sample one token from ``logits`` [V]; return ``(token_id, logprob)``."""
    logits = raw = logits.float()
    if p.frequency_penalty and counts:
        idx = torch.tensor(list(counts.keys()), dtype=torch.long)
        val = torch.tensor(list(counts.values()), dtype=torch.float32)
        logits = logits.clone()
        logits[idx] -= p.frequency_penalty * val
    if p.temperature <= 1e-6:  # greedy; logprob at temperature 1
        tok = int(torch.argmax(logits))
        return tok, float(torch.log_softmax(raw if p.raw_logprobs else logits, -1)[tok])
    logp = torch.log_softmax(logits / p.temperature, dim=-1)
    probs = logp.exp()
    vocab = probs.shape[-1]
    if 0 < p.top_k < vocab:
        top = torch.topk(probs, p.top_k).indices
        kept = torch.zeros_like(probs)
        kept[top] = probs[top]
        probs = kept
    if p.top_p < 1.0:
        sorted_p, order = torch.sort(probs, descending=True)
        drop = (torch.cumsum(sorted_p, dim=-1) - sorted_p) > p.top_p
        sorted_p[drop] = 0.0
        probs = torch.zeros_like(probs).scatter_(0, order, sorted_p)
    tok = int(torch.multinomial(probs, 1, generator=gen))
    if p.raw_logprobs:
        return tok, float(torch.log_softmax(raw, dim=-1)[tok])
    return tok, float(logp[tok])


@dataclass
class GenRequest:
    """One ``/generate`` call as the worker thread sees it."""

    input_ids: list[int]
    params: SamplingParams
    on_done: Callable[[GenRequest], None]
    return_logprob: bool = True
    logprob_start_len: int = -1
    rid: str = field(default_factory=lambda: uuid.uuid4().hex)
    output_ids: list[int] = field(default_factory=list)
    output_logprobs: list[float] = field(default_factory=list)
    input_token_logprobs: list[list[Any]] | None = None
    finish_reason: dict[str, Any] | None = None
    error: Exception | None = None
    cancelled: bool = False
    created: float = field(default_factory=time.perf_counter)
    generator: torch.Generator | None = None
    lora: Any = None  # the LoRA adapter it names (standin.lora.Adapter), if any
    cached_tokens: int = 0  # prompt tokens found in the prefix cache (meta_info)
    _counts: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        if self.params.sampling_seed is not None:
            self.generator = torch.Generator().manual_seed(self.params.sampling_seed)

    def append(self, tok: int, logprob: float) -> None:
        self.output_ids.append(tok)
        self.output_logprobs.append(logprob)
        if self.params.frequency_penalty:
            self._counts[tok] += 1

    def output_counts(self) -> dict[int, int] | None:
        return dict(self._counts) if self._counts else None

    def set_input_logprobs(self, logp: torch.Tensor) -> None:
        """``logp`` [L-1, V]: row i predicts prompt token i+1."""
        ids = self.input_ids
        tgt = torch.tensor(ids[1:], dtype=torch.long)
        vals = logp.gather(1, tgt[:, None])[:, 0].tolist() if len(ids) > 1 else []
        rows: list[list[Any]] = [[None, ids[0], None]]
        rows += [[v, t, None] for v, t in zip(vals, ids[1:], strict=True)]
        self.input_token_logprobs = rows[max(0, self.logprob_start_len) :]

    def check_finished(
        self, eos_ids: set[int], max_len: int, tokenizer: Any
    ) -> dict[str, Any] | None:
        """SGLang's order: length, then stop/eos token ids, then stop strings."""
        n = len(self.output_ids)
        if n >= self.params.max_new_tokens:
            return {"type": "length", "length": self.params.max_new_tokens}
        if len(self.input_ids) + n >= max_len:
            return {"type": "length", "length": n}
        last = self.output_ids[-1]
        if not self.params.ignore_eos and (
            last in eos_ids or last in self.params.stop_token_ids
        ):
            return {"type": "stop", "matched": last}
        if self.params.stop and tokenizer is not None:
            width = max(len(s) for s in self.params.stop) + 1
            tail = tokenizer.decode(self.output_ids[-width:])
            for s in self.params.stop:
                if s in tail:
                    return {"type": "stop", "matched": s}
        return None

    def finish(self, reason: dict[str, Any]) -> None:
        if self.finish_reason is None and self.error is None:
            self.finish_reason = reason
            self.on_done(self)

    def fail(self, error: Exception) -> None:
        if self.finish_reason is None and self.error is None:
            self.error = error
            self.on_done(self)

    @property
    def done(self) -> bool:
        return self.finish_reason is not None or self.error is not None


def parse_input_ids(
    body: dict[str, Any], vocab_size: int, tokenizer: Any = None
) -> list[int]:
    """Validated prompt ids of a ``/generate`` body; ``ValueError`` if bad."""
    ids = body.get("input_ids")
    if ids is None and isinstance(body.get("text"), str) and tokenizer:
        ids = tokenizer.encode(body["text"], add_special_tokens=False)
    if not isinstance(ids, list) or not ids:
        raise ValueError("input_ids must be a non-empty list of token ids")
    if isinstance(ids[0], list):
        raise ValueError("batched input_ids are not supported; send one request each")
    if not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
        raise ValueError("input_ids must contain integers only")
    bad = [t for t in ids if t < 0 or t >= vocab_size]
    if bad:
        raise ValueError(f"token id {bad[0]} outside the vocabulary [0, {vocab_size})")
    return ids


def check_context_length(
    n_input: int, max_new_tokens: int | None, context_length: int
) -> None:
    """SGLang's length rule, with its messages: the prompt and the requested new
    tokens together must stay *below* the context length (``ValueError``, which
    the server answers with 400)."""
    if n_input >= context_length:
        raise ValueError(
            f"The input ({n_input} tokens) is longer than the model's context "
            f"length ({context_length} tokens)."
        )
    if max_new_tokens is not None and n_input + max_new_tokens >= context_length:
        raise ValueError(
            "Requested token count exceeds the model's maximum context length of "
            f"{context_length} tokens. You requested a total of "
            f"{n_input + max_new_tokens} tokens: {n_input} tokens from the input "
            f"messages and {max_new_tokens} tokens for the completion. Please reduce "
            "the number of tokens in the input messages or the completion to fit "
            "within the limit."
        )


def build_response(
    req: GenRequest,
    tokenizer: Any,
    weight_version: int,
    now: float,
    with_text: bool = True,
) -> dict[str, Any]:
    """SGLang's non-streaming ``/generate`` response for a finished request
    (without ``text`` under ``skip_tokenizer_init``, as SGLang)."""
    text = ""
    if tokenizer is not None and req.output_ids:
        skip = req.params.skip_special_tokens
        text = tokenizer.decode(req.output_ids, skip_special_tokens=skip)
    meta: dict[str, Any] = {
        "id": req.rid,
        "finish_reason": req.finish_reason,
        "prompt_tokens": len(req.input_ids),
        "completion_tokens": len(req.output_ids),
        "cached_tokens": req.cached_tokens,
        "weight_version": str(weight_version),
        "e2e_latency": now - req.created,
    }
    if req.return_logprob:
        meta["output_token_logprobs"] = [
            [lp, t, None]
            for lp, t in zip(req.output_logprobs, req.output_ids, strict=True)
        ]
        if req.input_token_logprobs is not None:
            meta["input_token_logprobs"] = req.input_token_logprobs
    out = {"output_ids": list(req.output_ids), "meta_info": meta}
    return {"text": text, **out} if with_text else out

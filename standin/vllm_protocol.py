"""vLLM's ``/v1/completions`` as AReaL 1.0.4's ``RemotevLLMEngine`` uses it.

AReaL's ``VLLMBackend`` (``areal/engine/vllm_remote.py``) posts a flat body:
``prompt`` (token ids), ``max_tokens``, ``temperature``, ``top_p``, ``top_k``,
``stop_token_ids``, ``ignore_eos``, ``skip_special_tokens``,
``return_tokens_as_token_ids: true``, ``logprobs: 0``, ``use_beam_search``,
``stream: false`` (and ``model``, the versioned adapter, under LoRA). It reads
``choices[0]``: ``finish_reason`` and ``logprobs.tokens`` (``"token_id:N"``,
split at ``:``) with ``logprobs.token_logprobs``. Where vLLM and SGLang differ,
this module answers as vLLM 0.19 does (sources in vllm-project/vllm):

* **finish reasons** are strings, ``stop`` / ``length`` / ``abort``, with
  ``stop_reason`` the matched stop token id (``None`` for the tokenizer's EOS);
  stop tokens are checked before the length cap, and ``ignore_eos`` leaves
  ``stop_token_ids`` in force (``vllm/v1/core/sched/utils.py``, ``check_stop``);
  generation-config EOS ids count as stop token ids unless ``ignore_eos``
  (``SamplingParams.update_from_generation_config``);
* **logprobs** are the default ``raw_logprobs`` mode: log-softmax of the raw
  logits, before penalties and temperature (``vllm/v1/sample/sampler.py``), laid
  out as ``CompletionLogProbs`` (``_create_completion_logprobs`` in
  ``vllm/entrypoints/openai/completion/serving.py``: ``text_offset``,
  ``token_logprobs`` floored at -9999, ``tokens``, ``top_logprobs`` holding the
  sampled token for ``logprobs: 0``);
* **an over-long request** is a 400 ``BadRequestError`` once prompt +
  ``max_tokens`` *exceeds* ``max_model_len`` (equal is served; SGLang refuses
  equal too), with the messages of vLLM's ``_validate_input`` and the
  ``(parameter=..., value=...)`` suffix of ``VLLMValidationError``;
* errors are ``{"error": {"message", "type", "param", "code"}}``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from standin.protocol import GenRequest, SamplingParams

ERROR_TYPES = {400: "BadRequestError", 404: "NotFoundError", 500: "InternalServerError"}
LOGPROB_FLOOR = -9999.0  # vLLM's floor for -inf logprobs in JSON


class VllmRefusal(ValueError):
    """A request vLLM refuses (400 unless ``status`` says otherwise)."""

    def __init__(
        self,
        message: str,
        param: str | None = None,
        value: Any = None,
        status: int = 400,
    ) -> None:
        if param is not None:  # VLLMValidationError's suffix
            message = f"{message} (parameter={param}, value={value})"
        super().__init__(message)
        self.param, self.status = param, status


def error_response(status: int, message: str, param: str | None = None) -> web.Response:
    """vLLM's ``ErrorResponse`` body."""
    kind = ERROR_TYPES.get(status, "BadRequestError")
    body = {"message": message, "type": kind, "param": param, "code": status}
    return web.json_response({"error": body}, status=status)


def refusal_response(exc: VllmRefusal) -> web.Response:
    return error_response(exc.status, str(exc), exc.param)


def prompt_ids(body: dict[str, Any], vocab_size: int) -> list[int]:
    """The token ids of a completion's ``prompt`` (one prompt, ids only)."""
    ids = body.get("prompt")
    if isinstance(ids, str):
        raise VllmRefusal("the CPU stand-in serves token-id prompts only", "prompt")
    if not isinstance(ids, list) or not ids:
        raise VllmRefusal("prompt must be a non-empty list of token ids", "prompt")
    if isinstance(ids[0], list):
        raise VllmRefusal("batched prompts are not served; send one each", "prompt")
    if not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
        raise VllmRefusal("prompt must contain integers only", "prompt")
    if max(ids) >= vocab_size or min(ids) < 0:
        bad = max(ids) if max(ids) >= vocab_size else min(ids)
        raise VllmRefusal(f"Token id {bad} is out of vocabulary", "prompt", bad)
    return ids


def check_model_len(n_input: int, max_tokens: int | None, max_model_len: int) -> int:
    """vLLM's length rule; returns ``max_tokens`` (vLLM's default when None:
    what the context leaves)."""
    if n_input >= max_model_len:
        raise VllmRefusal(
            f"This model's maximum context length is {max_model_len} tokens. "
            f"However, your request has {n_input} input tokens. Please reduce the "
            "length of the input messages.",
            "input_tokens",
            n_input,
        )
    if max_tokens is None:
        return max_model_len - n_input
    if n_input + max_tokens > max_model_len:
        raise VllmRefusal(
            f"'max_tokens' or 'max_completion_tokens' is too large: {max_tokens}. "
            f"This model's maximum context length is {max_model_len} tokens and "
            f"your request has {n_input} input tokens ({max_tokens} > "
            f"{max_model_len} - {n_input}).",
            "max_tokens",
            max_tokens,
        )
    return max_tokens


def completion_params(body: dict[str, Any]) -> SamplingParams:
    """The flat sampling fields of a completion body (``VllmRefusal`` if bad or
    not served by the stand-in)."""
    if body.get("stream"):
        raise VllmRefusal("stream=true is not served by the CPU stand-in", "stream")
    if body.get("use_beam_search"):
        raise VllmRefusal("beam search is not served by the CPU stand-in")
    if body.get("n", 1) != 1:
        raise VllmRefusal("n must be 1 on the CPU stand-in", "n", body.get("n"))
    for key in ("echo", "prompt_logprobs"):
        if body.get(key):
            raise VllmRefusal(f"{key} is not served by the CPU stand-in", key)
    if (body.get("logprobs") or 0) > 0:
        raise VllmRefusal("the CPU stand-in returns logprobs: 0 only", "logprobs")
    top_k = body.get("top_k")
    raw = {
        "temperature": body.get("temperature"),
        "top_p": body.get("top_p"),
        # vLLM: top_k <= 0 (or None) disables it
        "top_k": None if top_k is None or top_k <= 0 else top_k,
        "stop_token_ids": body.get("stop_token_ids"),
        "stop": body.get("stop"),
        "ignore_eos": body.get("ignore_eos", False),
        "skip_special_tokens": body.get("skip_special_tokens", True),
        "frequency_penalty": body.get("frequency_penalty"),
        "sampling_seed": body.get("seed"),
    }
    try:
        params = SamplingParams.from_json(raw)
    except ValueError as e:
        raise VllmRefusal(str(e)) from e
    params.raw_logprobs = True
    return params


@dataclass
class CompletionRequest(GenRequest):
    """A ``/v1/completions`` request: vLLM's stop rule (``check_stop``)."""

    logprobs: int | None = None
    as_token_ids: bool = False

    def check_finished(
        self, eos_ids: set[int], max_len: int, tokenizer: Any
    ) -> dict[str, Any] | None:
        """vLLM's order: EOS, then stop token ids, then the length cap."""
        last, p = self.output_ids[-1], self.params
        tok_eos = getattr(tokenizer, "eos_token_id", None)
        if not p.ignore_eos and last in eos_ids:
            return {"type": "stop", "matched": None if last == tok_eos else last}
        if last in p.stop_token_ids:
            return {"type": "stop", "matched": last}
        n = len(self.output_ids)
        if n >= p.max_new_tokens or len(self.input_ids) + n >= max_len:
            return {"type": "length", "length": n}
        if p.stop and tokenizer is not None:
            width = max(len(s) for s in p.stop) + 1
            tail = tokenizer.decode(self.output_ids[-width:])
            for s in p.stop:
                if s in tail:
                    return {"type": "stop", "matched": s}
        return None


def _token(t: int, tokenizer: Any, as_ids: bool) -> str:
    if as_ids or tokenizer is None:
        return f"token_id:{t}"
    return tokenizer.decode([t])


def completion_logprobs(req: CompletionRequest, tokenizer: Any) -> dict[str, Any]:
    """``CompletionLogProbs`` of the sampled tokens (``logprobs: 0``)."""
    tokens = [_token(t, tokenizer, req.as_token_ids) for t in req.output_ids]
    lps = [max(lp, LOGPROB_FLOOR) for lp in req.output_logprobs]
    offsets, at = [], 0
    for tok in tokens:
        offsets.append(at)
        at += len(tok)
    top = [{tok: lp} for tok, lp in zip(tokens, lps, strict=True)]
    return {
        "text_offset": offsets,
        "token_logprobs": lps,
        "tokens": tokens,
        "top_logprobs": top,
    }


def completion_response(
    req: CompletionRequest, tokenizer: Any, model: str, with_text: bool
) -> dict[str, Any]:
    """vLLM's non-streaming ``CompletionResponse`` for a finished request."""
    reason = req.finish_reason or {"type": "abort"}
    text = ""
    if with_text and tokenizer is not None and req.output_ids:
        skip = req.params.skip_special_tokens
        text = tokenizer.decode(req.output_ids, skip_special_tokens=skip)
    logprobs = None if req.logprobs is None else completion_logprobs(req, tokenizer)
    choice = {
        "index": 0,
        "text": text,
        "logprobs": logprobs,
        "finish_reason": reason["type"],
        "stop_reason": reason.get("matched") if reason["type"] == "stop" else None,
        "prompt_logprobs": None,
    }
    n_in, n_out = len(req.input_ids), len(req.output_ids)
    return {
        "id": f"cmpl-{req.rid}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": {
            "prompt_tokens": n_in,
            "total_tokens": n_in + n_out,
            "completion_tokens": n_out,
            "prompt_tokens_details": None,
        },
    }

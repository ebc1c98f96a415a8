"""OpenAI's chat API shapes, the service's side: the reply, the streamed events.

What MemAgent returns besides the answer goes to the extension field
``memagent`` of the reply (the final memory, the per-turn trace when
``memagent.trace`` is true), where OpenAI's clients keep unknown fields
(``completion.model_extra["memagent"]`` in the ``openai`` package).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any


def new_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def completion(
    rid: str,
    model: str,
    answer: str,
    finish_reason: str,
    usage_: dict[str, int],
    memagent: dict[str, Any],
) -> dict[str, Any]:
    """A ``chat.completion`` object."""
    return {
        "id": rid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": usage_,
        "memagent": memagent,
    }


def chunk(
    rid: str,
    model: str,
    delta: dict[str, Any] | None,
    finish_reason: str | None = None,
    *,
    created: int,
    **extra: Any,
) -> dict[str, Any]:
    """A ``chat.completion.chunk`` object (``delta`` None: no choice, as
    OpenAI's usage chunk); ``created``: the stream's, the same in every chunk;
    ``extra``: top-level fields (``memagent``, ``usage``)."""
    choices = (
        []
        if delta is None
        else [
            {
                "index": 0,
                "delta": delta,
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ]
    )
    return {
        "id": rid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": choices,
        **extra,
    }


def sse(data: dict[str, Any] | str) -> bytes:
    """One server-sent event, as OpenAI streams them."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {text}\n\n".encode()


def answer_pieces(answer: str) -> list[str]:
    """The answer as content deltas: word by word, spaces kept, joined it is
    the answer."""
    pieces, start = [], 0
    for i in range(1, len(answer)):
        if answer[i] == " " and answer[i - 1] != " ":
            pieces.append(answer[start:i])
            start = i
    pieces.append(answer[start:])
    return [p for p in pieces if p]

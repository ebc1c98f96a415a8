"""OpenAI's chat API shapes, the caller's side: the request read into a question
and a document, and the error body (the reply's shapes: ``serve.reply``).

A request's last ``user`` message is the question; the text of the messages
before it (``user`` and ``assistant``; ``system`` messages are instructions, not
the document, and are ignored) is the document, or the extension field
``memagent.document`` holds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DOCUMENT_ROLES = ("user", "assistant")
IGNORED_ROLES = ("system", "developer", "tool")


class ServeError(Exception):
    """A request answered with an error: OpenAI's body, its HTTP status."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str,
        param: str | None = None,
        type: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.type = type or (
            "server_error" if status >= 500 else "invalid_request_error"
        )
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        """``{"error": {message, type, param, code}}``, as OpenAI answers."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


def bad_request(message: str, param: str | None, code: str = "invalid_value"):
    return ServeError(400, message, code=code, param=param)


@dataclass
class ChatRequest:
    """What a chat completion request asks of MemAgent."""

    question: str
    document: str
    document_param: str  # where the document came from (named in refusals)
    stream: bool = False
    include_usage: bool = False
    trace: bool = False
    sampling: dict[str, Any] = field(default_factory=dict)  # gconfig overrides
    max_tokens: int | None = None  # the final answer's budget, if the caller set one
    max_tokens_param: str = "max_tokens"  # or max_completion_tokens


def message_text(message: Any, i: int) -> tuple[str, str]:
    """``(role, text)`` of ``messages[i]``: content as a string or text parts."""
    where = f"messages[{i}]"
    if not isinstance(message, dict):
        raise bad_request(f"{where} must be an object", where)
    role = message.get("role")
    if not isinstance(role, str):
        raise bad_request(f"{where}.role must be a string", f"{where}.role")
    content = message.get("content")
    if content is None:
        return role, ""
    if isinstance(content, str):
        return role, content
    if not isinstance(content, list):
        raise bad_request(
            f"{where}.content must be a string or a list of text parts",
            f"{where}.content",
        )
    texts = []
    for j, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") != "text":
            raise bad_request(
                f"{where}.content[{j}]: only text parts are read (MemAgent reads text)",
                f"{where}.content[{j}]",
            )
        if not isinstance(part.get("text"), str):
            raise bad_request(
                f"{where}.content[{j}].text must be a string",
                f"{where}.content[{j}].text",
            )
        texts.append(part["text"])
    return role, "".join(texts)


def _number(body: dict[str, Any], key: str, low: float, high: float) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad_request(f"{key} must be a number", key)
    if not low <= value <= high:
        raise bad_request(f"{key} must be in [{low}, {high}], got {value}", key)
    return float(value)


def sampling_of(body: dict[str, Any]) -> dict[str, Any]:
    """``temperature`` and ``top_p`` as gconfig overrides (temperature 0: greedy)."""
    out: dict[str, Any] = {}
    temperature = _number(body, "temperature", 0.0, 2.0)
    if temperature is not None:
        out.update(greedy=temperature == 0.0)
        if temperature > 0:
            out["temperature"] = temperature
    top_p = _number(body, "top_p", 0.0, 1.0)
    if top_p is not None:
        if top_p == 0:
            raise bad_request("top_p must be above 0", "top_p")
        out["top_p"] = top_p
    return out


# OpenAI fields a MemAgent episode cannot honour, refused when set (a value
# that asks for nothing, as ``tools: []``, is accepted); why, for the message
UNSUPPORTED = {
    "tools": "MemAgent does not call tools",
    "functions": "MemAgent does not call tools",
    "tool_choice": "MemAgent does not call tools",
    "function_call": "MemAgent does not call tools",
    "logprobs": "MemAgent's reply has no log probabilities",
    "top_logprobs": "MemAgent's reply has no log probabilities",
    "stop": "the answer protocol decides where the answer ends",
    "seed": "episodes are not seeded per request (temperature 0 is greedy)",
    "logit_bias": "MemAgent does not bias tokens",
    "audio": "MemAgent reads and writes text",
}
NEUTRAL = {"tool_choice": ("none",), "response_format": ({"type": "text"},)}


def refuse_unsupported(body: dict[str, Any]) -> None:
    """400 naming the first field set that MemAgent cannot honour."""
    for key, why in UNSUPPORTED.items():
        value = body.get(key)
        if value is None or value is False or value in ([], {}, *NEUTRAL.get(key, ())):
            continue
        raise bad_request(
            f"{key} is not supported: {why}", key, "unsupported_parameter"
        )
    fmt = body.get("response_format")
    if fmt is not None and fmt not in NEUTRAL["response_format"]:
        raise bad_request(
            "response_format is not supported: the answer is the answer "
            'protocol\'s text (only {"type": "text"})',
            "response_format",
            "unsupported_parameter",
        )


def answer_budget(body: dict[str, Any]) -> tuple[int | None, str]:
    """``max_completion_tokens`` (or the older ``max_tokens``): the final
    answer's budget in tokens (the memory turns keep theirs)."""
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise bad_request(f"{key} must be an integer >= 1, got {value!r}", key)
        return value, key
    return None, "max_tokens"


def parse_chat_request(body: Any, model_name: str) -> ChatRequest:
    """A chat completion request's body, checked field by field (400 naming
    the field; 404 for another model than the one served)."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object", None)
    model = body.get("model")
    if not isinstance(model, str):
        raise bad_request("model must be a string", "model")
    if model != model_name:
        raise ServeError(
            404,
            f"The model `{model}` does not exist; this service serves `{model_name}`",
            code="model_not_found",
            param="model",
        )
    n = body.get("n")
    if n is not None and (isinstance(n, bool) or n != 1):
        raise bad_request("n must be 1 (one answer per episode)", "n")
    refuse_unsupported(body)
    stream = body.get("stream") or False
    if not isinstance(stream, bool):
        raise bad_request("stream must be a boolean", "stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise bad_request("stream_options must be an object", "stream_options")
    ext = body.get("memagent") or {}
    if not isinstance(ext, dict):
        raise bad_request("memagent must be an object", "memagent")
    trace = ext.get("trace", False)
    if not isinstance(trace, bool):
        raise bad_request("memagent.trace must be a boolean", "memagent.trace")
    sampling = sampling_of(body)
    max_tokens, max_tokens_param = answer_budget(body)
    question, document, param = read_messages(body.get("messages"), ext)
    return ChatRequest(
        question=question,
        document=document,
        document_param=param,
        stream=stream,
        include_usage=bool(options.get("include_usage")),
        trace=trace,
        sampling=sampling,
        max_tokens=max_tokens,
        max_tokens_param=max_tokens_param,
    )


def read_messages(messages: Any, ext: dict[str, Any]) -> tuple[str, str, str]:
    """``(question, document, where the document came from)``."""
    if not isinstance(messages, list) or not messages:
        raise bad_request("messages must be a non-empty list", "messages")
    read = [message_text(m, i) for i, m in enumerate(messages)]
    for i, (role, _) in enumerate(read):
        if role not in DOCUMENT_ROLES + IGNORED_ROLES:
            raise bad_request(
                f"messages[{i}].role {role!r} is unknown", f"messages[{i}].role"
            )
    users = [i for i, (role, _) in enumerate(read) if role == "user"]
    if not users:
        raise bad_request("no user message: the last one is the question", "messages")
    question = read[users[-1]][1]
    if not question.strip():
        raise bad_request(
            "the question (the last user message) is empty",
            f"messages[{users[-1]}].content",
        )
    parts = [text for role, text in read[: users[-1]] if role in DOCUMENT_ROLES]
    document, param = "\n\n".join(parts), "messages"
    if "document" in ext:
        if not isinstance(ext["document"], str):
            raise bad_request("memagent.document must be a string", "memagent.document")
        if any(p.strip() for p in parts):
            raise bad_request(
                "the document is given twice: as messages before the question and "
                "as memagent.document; give one",
                "memagent.document",
            )
        document, param = ext["document"], "memagent.document"
    if not document.strip():
        raise bad_request(
            "no document: put it in the messages before the question, or in "
            "memagent.document",
            param,
            code="missing_document",
        )
    return question, document, param

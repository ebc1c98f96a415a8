"""The service's engine: AReaL's client for the model servers, in the
service's own process, and what a failed model call means for a request.

``open_engine`` (the eval's) connects AReaL's `RemoteSGLangEngine` or
`RemotevLLMEngine` to running servers (``AREAL_LLM_SERVER_ADDRS``), or has
AReaL's scheduler launch them (``scheduler.type=local``) behind a rollout
controller, whose workers would run whole episodes. The service runs its
episodes itself, in its event loop, so that each request's turns can be
streamed and cancelled: for launched servers it connects a client of the same
class to the servers the controller launched.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from areal.api import ModelRequest, ModelResponse

from memagent_workflow.eval.config import MemAgentEvalConfig
from memagent_workflow.eval.engine import ClusterInference, open_engine
from memagent_workflow.serve.shapes import ServeError

# aiohttp's errors for a server that is not there (refused, reset, gone away)
_UNREACHABLE = re.compile(
    r"ClientConnectorError|ServerDisconnectedError|ClientOSError|"
    r"Connection refused|Cannot connect to host"
)


@contextlib.contextmanager
def serve_engine(
    config: MemAgentEvalConfig, inference: ClusterInference
) -> Iterator[Any]:
    """An engine whose ``agenerate`` this process may call, for the whole run."""
    with open_engine(config, inference) as engine:
        infos = getattr(engine, "server_infos", None)  # a launching controller
        if infos is None:
            yield engine
            return
        client = inference.engine_class()(config.rollout)
        client.initialize(
            addr=[f"{i.host}:{i.port}" for i in infos], train_data_parallel_size=1
        )
        try:
            yield client
        finally:
            client.destroy()


class TurnCounter:
    """An engine seen by one episode: counts the prompt and completion tokens
    of every turn and keeps the last failure of a model call."""

    def __init__(self, engine: Any):
        self.engine = engine
        self.turns = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.stop_reason: str | None = None
        self.error: BaseException | None = None

    async def agenerate(self, req: ModelRequest) -> ModelResponse:
        try:
            resp = await self.engine.agenerate(req)
        except Exception as exc:
            self.error = exc
            raise
        self.turns += 1
        self.prompt_tokens += len(req.input_ids)
        self.completion_tokens += len(resp.output_tokens)
        self.stop_reason = resp.stop_reason
        return resp

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)


def cause(exc: BaseException) -> str:
    """A failed model call in one line: AReaL's "Last error" (its message also
    holds the whole payload, token ids and all), else the exception."""
    text = f"{type(exc).__name__}: {exc}"
    last = re.search(r"Last error: (.*)$", str(exc), re.S)
    addr = re.search(r"Addr: ([^\s]+)\. Endpoint: ([^\s]+)\.", str(exc))
    if last:
        where = f" ({addr.group(1)}{addr.group(2)})" if addr else ""
        text = f"{last.group(1).strip()}{where}"
    return text[:500]


def engine_failure(exc: BaseException | None, error: str) -> ServeError:
    """503 for a model server that cannot be reached, 502 for one that failed;
    ``error``: the episode's record's, where the exception is not known."""
    text = cause(exc) if exc is not None else error[:500]
    retry = "model calls were made again for memagent.engine_retry_s before this"
    if _UNREACHABLE.search(text):
        return ServeError(
            503,
            f"the model server is unreachable: {text} ({retry})",
            code="engine_unavailable",
        )
    return ServeError(
        502, f"the model server failed: {text} ({retry})", code="engine_error"
    )

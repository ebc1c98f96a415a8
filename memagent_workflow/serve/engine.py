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

import asyncio
import contextlib
import re
from collections.abc import Iterator
from typing import Any

from areal.api import ModelRequest, ModelResponse
from areal.utils import logging

from memagent_workflow.eval.config import MemAgentEvalConfig
from memagent_workflow.eval.engine import ClusterInference, open_engine
from memagent_workflow.serve.shapes import ServeError

logger = logging.getLogger("MemAgentServe")


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


class EngineDown(Exception):
    """A model call given up on by the service: its server is known down, or
    silent past ``serve.call_timeout_s``; the message says so in words."""

    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


class TurnCounter:
    """An engine seen by one episode: counts the prompt and completion tokens
    of every turn and keeps the failure of the last model call (None once a
    call succeeds). Each call is given up on past ``call_timeout_s`` or once
    ``health`` knows the engine down."""

    def __init__(self, engine: Any, call_timeout_s: float = 0, health: Any = None):
        self.engine = engine
        self.call_timeout_s = call_timeout_s
        self.health = health
        self.turns = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.stop_reason: str | None = None
        self.error: BaseException | None = None

    async def agenerate(self, req: ModelRequest) -> ModelResponse:
        try:
            resp = await self.call(req)
        except Exception as exc:
            self.error = exc
            raise
        self.error = None  # a retry that succeeded: no cause is kept
        self.turns += 1
        self.prompt_tokens += len(req.input_ids)
        self.completion_tokens += len(resp.output_tokens)
        self.stop_reason = resp.stop_reason
        return resp

    async def call(self, req: ModelRequest) -> ModelResponse:
        """The engine's call, raced against its deadline and the engine's health."""
        if self.health is not None and not self.health.up:
            raise EngineDown(self.health.cause)
        call = asyncio.ensure_future(self.engine.agenerate(req))
        waits = [call]
        if self.health is not None:
            waits.append(asyncio.ensure_future(self.health.went_down()))
        timeout = self.call_timeout_s or None
        try:
            done, _ = await asyncio.wait(
                waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for task in waits:
                if not task.done():
                    task.cancel()
        if call in done:
            return call.result()
        if done:  # the health probe found the engine down meanwhile
            raise EngineDown(self.health.cause)
        where = address_of(self.engine, req.rid)
        raise EngineDown(
            f"the model server{where} did not answer within {timeout:g} s "
            "(serve.call_timeout_s)",
            timed_out=True,
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)


def address_of(engine: Any, rid: str) -> str:
    """`` at HOST:PORT``: the server AReaL's client sent ``rid`` to, if known."""
    addr = getattr(engine, "rid_to_address", {}).get(rid)
    if addr is None:
        addresses = getattr(engine, "addresses", None) or []
        addr = addresses[0] if len(addresses) == 1 else None
    return f" at {addr}" if addr else ""


# what AReaL's client's last error says, in words
_WORDS = (
    (r"Connection refused|ConnectionRefusedError|Cannot connect to host", "refused the connection"),
    (r"ServerDisconnectedError|Connection reset|ClientOSError|ConnectionResetError",
     "closed the connection without an answer"),
    (r"TimeoutError|timed out", "did not answer in time (rollout.request_timeout)"),
)  # fmt: skip


def cause(exc: BaseException) -> tuple[str, bool]:
    """A failed model call in words, and whether its server could not be
    reached. AReaL's message holds the whole payload (token ids and all) and
    the aiohttp repr: those go to the log, not to the caller."""
    if isinstance(exc, EngineDown):
        return str(exc), True
    text = str(exc)
    last = re.search(r"Last error: (.*)$", text, re.S)
    addr = re.search(r"Addr: ([^\s]+)\.", text)
    where = f" at {addr.group(1)}" if addr else ""
    error = last.group(1) if last else f"{type(exc).__name__}: {text}"
    for pattern, words in _WORDS:
        if re.search(pattern, error):
            return f"the model server{where} {words}", True
    status = re.search(r"status=(\d{3})", error)
    if status:
        return f"the model server{where} answered HTTP {status.group(1)}", False
    return f"the model server{where} failed ({type(exc).__name__})", False


def engine_failure(exc: BaseException | None, error: str) -> ServeError:
    """503 for a model server that cannot be reached, 504 for one silent past
    its deadline, 502 for one that failed; ``error``: the episode's record's,
    where the exception is not known. The whole error goes to the log."""
    text = repr(exc) if exc is not None else error
    text = re.sub(r"Payload: .*?\. Addr:", "Payload: (...). Addr:", text, flags=re.S)
    logger.warning(f"model call failed: {text[:2000]}")
    if exc is None:
        return ServeError(502, "the model server failed", code="engine_error")
    text, unreachable = cause(exc)
    if isinstance(exc, EngineDown) and exc.timed_out:
        return ServeError(504, text, code="engine_timeout")
    if unreachable:
        return ServeError(503, text, code="engine_unavailable")
    return ServeError(502, text, code="engine_error")

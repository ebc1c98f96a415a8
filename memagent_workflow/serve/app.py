"""The HTTP routes: ``POST /v1/chat/completions``, ``GET /v1/models``,
``GET /health``; one log line per request.

A chat request is checked (key, body, question) before it queues; in its slot
the document is encoded and its size checked, then its episode runs in this
event loop, its turns interleaved on the engine with every other request's. A
client that disconnects cancels its episode, which frees its slot. With
``stream: true`` each memory turn is an event as it finishes, then the answer
comes as content deltas and ``[DONE]``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, TypeVar

from areal.utils import logging
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from memagent_workflow.serve.admission import Admission
from memagent_workflow.serve.auth import check_authorization
from memagent_workflow.serve.episode import EpisodeRunner
from memagent_workflow.serve.limits import Limits
from memagent_workflow.serve.reply import (
    answer_pieces,
    chunk,
    completion,
    new_id,
    sse,
    usage,
)
from memagent_workflow.serve.shapes import (
    ChatRequest,
    ServeError,
    bad_request,
    parse_chat_request,
)

logger = logging.getLogger("MemAgentServe")
T = TypeVar("T")
GONE = "499 client disconnected"


class ClientGone(Exception):
    """The client disconnected before its reply was ready."""


@dataclass
class RequestLog:
    """The one log line of a request: id, document tokens, chunks, seconds, outcome."""

    rid: str
    start: float
    outcome: str = "500 unfinished"
    tokens: int | None = None
    chunks: int | None = None

    def write(self) -> None:
        tokens = "-" if self.tokens is None else self.tokens
        chunks = "-" if self.chunks is None else self.chunks
        seconds = time.perf_counter() - self.start
        logger.info(
            f"request {self.rid}: {self.outcome}; {tokens} document tokens, "
            f"{chunks} chunks, {seconds:.2f} s"
        )


async def wait_disconnect(receive: Any) -> None:
    """Returns once the client has gone (ASGI's ``http.disconnect``)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def guarded(request: Request, work: Awaitable[T]) -> T:
    """``work``'s result; cancelled (`ClientGone`) if the client disconnects first."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(wait_disconnect(request.receive))
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result()
        raise ClientGone
    finally:
        task.cancel()
        gone.cancel()
        await asyncio.gather(task, gone, return_exceptions=True)


async def read_json(request: Request, limits: Limits) -> Any:
    """The body as JSON, refused past ``serve.max_body_bytes`` as it arrives."""
    length = request.headers.get("content-length", "")
    if length.isdigit():
        limits.body(int(length))
    data = bytearray()
    async for piece in request.stream():
        data += piece
        limits.body(len(data))
    try:
        return json.loads(data)
    except ValueError as exc:
        raise bad_request(
            f"the body is not JSON: {exc}", None, "invalid_json"
        ) from None


class Service:
    """The routes over one episode runner, its limits and its admission."""

    def __init__(
        self,
        runner: EpisodeRunner,
        limits: Limits,
        admission: Admission,
        model: str,
        key: str | None,
    ):
        self.runner, self.limits, self.admission = runner, limits, admission
        self.model, self.key = model, key
        self.created = int(time.time())

    def app(self) -> FastAPI:
        app = FastAPI(title="MemAgent", docs_url=None, redoc_url=None)
        app.get("/health")(self.health)
        app.get("/v1/models")(self.models)
        app.post("/v1/chat/completions")(self.chat)
        return app

    async def health(self) -> dict[str, Any]:
        a = self.admission
        return {
            "status": "ok",
            "model": self.model,
            "episodes_running": a.running,
            "requests_queued": a.queued,
        }

    async def models(self, request: Request) -> Response:
        try:
            check_authorization(request.headers.get("authorization"), self.key)
        except ServeError as exc:
            return error_response(exc)
        model = {"id": self.model, "object": "model", "created": self.created}
        return JSONResponse(
            {"object": "list", "data": [{**model, "owned_by": "memagent"}]}
        )

    async def chat(self, request: Request) -> Response:
        log = RequestLog(new_id(), time.perf_counter())
        streamed = False
        try:
            check_authorization(request.headers.get("authorization"), self.key)
            req = parse_chat_request(await read_json(request, self.limits), self.model)
            self.limits.question(req.question, "messages")
            if req.stream:
                reply = await self.stream(request, req, log)
                streamed = True  # its episode task writes the log line
                return reply
            async with self.admission.slot():
                ids = await self.document(req, log)
                result = await guarded(
                    request, self.runner.run(log.rid, req.question, ids, req.sampling)
                )
            log.outcome = "200 answered"
            usage_ = usage(result.prompt_tokens, result.completion_tokens)
            memagent = result.memagent(req.trace)
            return JSONResponse(
                completion(
                    log.rid,
                    self.model,
                    result.answer,
                    result.finish_reason,
                    usage_,
                    memagent,
                )
            )
        except ServeError as exc:
            log.outcome = f"{exc.status} {exc.code}"
            return error_response(exc)
        except ClientGone:
            log.outcome = GONE
            return Response(status_code=499)
        except Exception as exc:  # a fault here: answered, the service stays up
            logger.exception(f"request {log.rid} failed")
            error = ServeError(
                500, f"{type(exc).__name__}: {exc}"[:500], code="internal"
            )
            log.outcome = "500 internal"
            return error_response(error)
        finally:
            if not streamed:
                log.write()

    async def document(self, req: ChatRequest, log: RequestLog) -> Any:
        """The document's token ids (off the event loop), its size checked."""
        ids = await asyncio.to_thread(
            self.limits.encode, req.document, req.document_param
        )
        log.tokens = len(ids)
        log.chunks = self.limits.document(len(ids), req.document_param)
        return ids

    async def stream(
        self, request: Request, req: ChatRequest, log: RequestLog
    ) -> Response:
        """Queue, encode and check before the 200 (refusals keep their status);
        then the episode runs in its own task, which ends the events, frees
        the slot and writes the log line however it ends."""
        stack = AsyncExitStack()
        await stack.enter_async_context(self.admission.slot())
        try:
            ids = await self.document(req, log)
        except BaseException:
            await stack.aclose()
            raise
        events: asyncio.Queue[bytes | None] = asyncio.Queue()
        task = asyncio.create_task(self.streamed(request, req, ids, log, events, stack))

        async def body() -> AsyncIterator[bytes]:
            try:
                while (event := await events.get()) is not None:
                    yield event
            finally:
                if not task.done():  # the reply could not be sent: client gone
                    task.cancel()

        return StreamingResponse(body(), media_type="text/event-stream")

    async def streamed(
        self,
        request: Request,
        req: ChatRequest,
        ids: Any,
        log: RequestLog,
        events: asyncio.Queue[bytes | None],
        stack: AsyncExitStack,
    ) -> None:
        rid, model, put = log.rid, self.model, events.put_nowait
        put(sse(chunk(rid, model, {"role": "assistant", "content": ""})))

        def on_turn(turn: int, memory_tokens: int) -> None:
            ext = {"turn": turn, "chunks": log.chunks, "memory_tokens": memory_tokens}
            put(sse(chunk(rid, model, {}, memagent=ext)))

        log.outcome = GONE  # unless it ends otherwise
        try:
            episode = self.runner.run(rid, req.question, ids, req.sampling, on_turn)
            result = await guarded(request, episode)
            for piece in answer_pieces(result.answer):
                put(sse(chunk(rid, model, {"content": piece})))
            ext = result.memagent(req.trace)
            put(sse(chunk(rid, model, {}, result.finish_reason, memagent=ext)))
            if req.include_usage:
                u = usage(result.prompt_tokens, result.completion_tokens)
                put(sse(chunk(rid, model, None, usage=u)))
            put(sse("[DONE]"))
            log.outcome = "200 answered (streamed)"
        except ServeError as exc:  # after the 200: OpenAI's error event
            put(sse(exc.body()))
            log.outcome = f"{exc.status} {exc.code} (streamed)"
        except ClientGone:
            pass
        finally:
            put(None)
            await stack.aclose()
            log.write()


def error_response(exc: ServeError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

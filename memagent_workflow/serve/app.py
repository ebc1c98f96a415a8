"""The HTTP routes: ``POST /v1/chat/completions``, ``GET /v1/models``,
``GET /health``; one log line per request.

A chat request is checked (key, the engine's health, body, question) before
it queues; in its slot the document is encoded and its size checked, then its
episode runs in this event loop, its turns interleaved on the engine with
every other request's, within ``serve.request_timeout_s``. A client that
disconnects, queued or running, cancels its request, which leaves the queue or
frees its slot. With ``stream: true`` each memory turn is an event as it
finishes, then the answer comes as content deltas and ``[DONE]``; a failure
after the 200 is an error event that ends the stream.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

from areal.utils import logging
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException

from memagent_workflow.serve.admission import Admission
from memagent_workflow.serve.auth import check_authorization
from memagent_workflow.serve.episode import EpisodeResult, EpisodeRunner
from memagent_workflow.serve.limits import Limits
from memagent_workflow.serve.reply import (
    answer_pieces,
    chunk,
    completion,
    new_id,
    sse,
    usage,
)
from memagent_workflow.serve.shapes import ChatRequest, ServeError, parse_chat_request
from memagent_workflow.serve.transport import (
    GONE,
    ClientGone,
    RequestLog,
    guarded,
    read_body,
    read_json,
)

logger = logging.getLogger("MemAgentServe")
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def internal(rid: str) -> ServeError:
    return ServeError(
        500,
        f"the service failed on request {rid}; its log has the cause",
        code="internal",
    )


class Service:
    """The routes over one episode runner, its limits, its admission and the
    engine's health (None: not probed)."""

    def __init__(
        self,
        runner: EpisodeRunner,
        limits: Limits,
        admission: Admission,
        model: str,
        key: str | None,
        health: Any = None,
    ):
        self.runner, self.limits, self.admission = runner, limits, admission
        self.model, self.key, self.health = model, key, health
        self.created = int(time.time())

    def app(self) -> FastAPI:
        cfg = self.limits.cfg
        app = FastAPI(
            title="MemAgent",
            docs_url=None,
            redoc_url=None,
            openapi_url="/openapi.json" if cfg.openapi else None,
        )
        app.get("/health")(self.health_route)
        app.get("/v1/models")(self.models)
        app.post("/v1/chat/completions")(self.chat)
        app.exception_handler(HTTPException)(http_error)
        return app

    async def health_route(self) -> JSONResponse:
        a, up = self.admission, self.health is None or self.health.up
        out: dict[str, Any] = {
            "status": "ok" if up else "engine_down",
            "model": self.model,
            "episodes_running": a.running,
            "requests_queued": a.queued,
        }
        if self.health is not None:
            out.update(self.health.report())
        return JSONResponse(out, status_code=200 if up else 503)

    async def models(self, request: Request) -> Response:
        try:
            check_authorization(request.headers.get("authorization"), self.key)
        except ServeError as exc:
            return error_response(exc)
        model = {"id": self.model, "object": "model", "created": self.created}
        return JSONResponse(
            {"object": "list", "data": [{**model, "owned_by": "memagent"}]}
        )

    async def read(self, request: Request) -> tuple[ChatRequest, int]:
        """The request checked before it queues, and its body's bytes."""
        check_authorization(request.headers.get("authorization"), self.key)
        if self.health is not None:
            self.health.check_up()
        data = await read_body(request, self.limits)
        req = parse_chat_request(await read_json(data), self.model)
        self.runner.check_answer_budget(req.max_tokens, req.max_tokens_param)
        self.limits.question_length(req.question, "messages")
        await asyncio.to_thread(self.limits.question, req.question, "messages")
        return req, len(data)

    async def chat(self, request: Request) -> Response:
        log = RequestLog(new_id(), time.perf_counter())
        streamed = False
        try:
            req, n_bytes = await self.read(request)
            if req.stream:
                reply = await self.stream(request, req, log, n_bytes)
                streamed = True  # its episode task writes the log line
                return reply
            result = await guarded(request, self.answer(req, log, n_bytes))
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
        except Exception:  # a fault here: answered, the service stays up
            logger.exception(f"request {log.rid} failed")
            log.outcome = "500 internal"
            return error_response(internal(log.rid))
        finally:
            if not streamed:
                log.write()

    async def answer(self, req: ChatRequest, log: RequestLog, n_bytes: int) -> Any:
        """Queued, then the episode in its slot."""
        async with self.admission.slot(n_bytes):
            ids = await self.document(req, log)
            return await self.episode(req, log, ids)

    async def episode(
        self, req: ChatRequest, log: RequestLog, ids: Any, on_turn: Any = None
    ) -> EpisodeResult:
        """The request's episode, 504 past ``serve.request_timeout_s``."""
        timeout = self.limits.cfg.request_timeout_s
        run = self.runner.run(
            log.rid, req.question, ids, req.sampling, on_turn, req.max_tokens
        )
        try:
            return await asyncio.wait_for(run, timeout)
        except TimeoutError:
            raise ServeError(
                504,
                f"the request did not finish within {timeout:g} s "
                "(serve.request_timeout_s)",
                code="request_timeout",
            ) from None

    async def document(self, req: ChatRequest, log: RequestLog) -> Any:
        """The document's token ids (off the event loop), its size checked."""
        ids = await asyncio.to_thread(
            self.limits.encode, req.document, req.document_param
        )
        log.tokens = len(ids)
        log.chunks = self.limits.document(len(ids), req.document_param)
        return ids

    async def stream(
        self, request: Request, req: ChatRequest, log: RequestLog, n_bytes: int
    ) -> Response:
        """Queue, encode and check before the 200 (refusals keep their status;
        a client gone meanwhile leaves the queue); then the episode runs in its
        own task, which ends the events, frees the slot and writes the log
        line however it ends."""
        stack = AsyncExitStack()

        async def admitted() -> Any:
            await stack.enter_async_context(self.admission.slot(n_bytes))
            return await self.document(req, log)

        try:
            ids = await guarded(request, admitted())
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

        return StreamingResponse(
            body(), media_type="text/event-stream", headers=STREAM_HEADERS
        )

    async def streamed(
        self,
        request: Request,
        req: ChatRequest,
        ids: Any,
        log: RequestLog,
        events: asyncio.Queue[bytes | None],
        stack: AsyncExitStack,
    ) -> None:
        put = events.put_nowait
        event = functools.partial(chunk, log.rid, self.model, created=int(time.time()))
        put(sse(event({"role": "assistant", "content": ""})))

        def on_turn(turn: int, memory_tokens: int) -> None:
            ext = {"turn": turn, "chunks": log.chunks, "memory_tokens": memory_tokens}
            put(sse(event({}, memagent=ext)))

        log.outcome = GONE  # unless it ends otherwise
        try:
            result = await guarded(request, self.episode(req, log, ids, on_turn))
            for piece in answer_pieces(result.answer):
                put(sse(event({"content": piece})))
            ext = result.memagent(req.trace)
            put(sse(event({}, result.finish_reason, memagent=ext)))
            if req.include_usage:
                u = usage(result.prompt_tokens, result.completion_tokens)
                put(sse(event(None, usage=u)))
            put(sse("[DONE]"))
            log.outcome = "200 answered (streamed)"
        except ServeError as exc:  # after the 200: OpenAI's error event
            put(sse(exc.body()))
            log.outcome = f"{exc.status} {exc.code} (streamed)"
        except ClientGone:
            pass
        except Exception:  # a fault here: an error event, the stream ends
            logger.exception(f"request {log.rid} failed")
            put(sse(internal(log.rid).body()))
            log.outcome = "500 internal (streamed)"
        finally:
            put(None)
            await stack.aclose()
            log.write()


def error_response(exc: ServeError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)


async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
    """An unknown route (404) or method (405) in OpenAI's error body."""
    what = {
        404: ("not_found", f"no route {request.url.path}: this service answers "
              "POST /v1/chat/completions, GET /v1/models and GET /health"),
        405: ("method_not_allowed",
              f"{request.method} is not allowed on {request.url.path}"),
    }  # fmt: skip
    code, message = what.get(exc.status_code, ("http_error", str(exc.detail)))
    error = ServeError(exc.status_code, message, code=code, headers=exc.headers)
    return error_response(error)

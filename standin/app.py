"""The stand-in server's aiohttp application over a ``StandinEngine``, in one of
two protocols (``PROTOCOLS``, the server's ``--protocol``): SGLang's routes
(health, info, ``/generate``, pause and continue, no-ops, with the weight-update
and LoRA routes of ``weight_routes`` and ``lora_routes``), or AReaL's vLLM
server's (``vllm_routes``). Both get the stand-in's own info and probe routes.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from standin import lora_routes
from standin.engine import GenRequest, StandinEngine
from standin.protocol import (
    SamplingParams,
    build_response,
    check_context_length,
    parse_input_ids,
)
from standin.replies import error, fail, json_body, ok, served, until_done
from standin.vllm_routes import add_vllm_routes
from standin.weight_routes import add_probe_routes, add_weight_routes

PROTOCOLS = ("sglang", "vllm")

STOP_STRINGS_MESSAGE = (
    "sampling_params.stop (stop strings) needs the tokenizer, and this server "
    "runs with skip_tokenizer_init, as AReaL's SGLang config does: SGLang "
    "0.5.10.post1 cannot honour stop strings then either (its scheduler decodes "
    "the output tail with the tokenizer it did not load). Use stop_token_ids."
)


def build_app(
    engine: StandinEngine, middlewares: list = (), protocol: str = "sglang"
) -> web.Application:
    """The aiohttp application serving ``engine`` in ``protocol``
    (``middlewares``: see ``faults``)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol {protocol!r}: expected one of {PROTOCOLS}")
    app = web.Application(
        client_max_size=256 * 1024 * 1024, middlewares=list(middlewares)
    )
    routes = web.RouteTableDef()
    add_info_routes(routes, engine, protocol)
    add_probe_routes(routes, engine)
    if protocol == "vllm":
        add_vllm_routes(routes, engine)
    else:
        add_sglang_routes(routes, engine)
        add_weight_routes(routes, engine)
        lora_routes.add_routes(routes, engine)
    app.add_routes(routes)
    return app


def add_info_routes(
    routes: web.RouteTableDef, engine: StandinEngine, protocol: str
) -> None:
    """SGLang's info routes; in either protocol ``/get_server_info`` carries the
    stand-in's own fields, for tests."""

    def info(**extra: Any) -> dict[str, Any]:
        return {"model_path": engine.model_path, "n_updates": engine.n_updates, **extra}

    @routes.get("/get_model_info")
    @routes.get("/model_info")
    async def model_info(_: web.Request) -> web.Response:
        extra = {"tokenizer_path": engine.model_path, "is_generation": True}
        return web.json_response(info(**extra))

    @routes.get("/get_server_info")
    async def server_info(_: web.Request) -> web.Response:
        extra = {
            "context_length": engine.context_length,
            "skip_tokenizer_init": engine.skip_tokenizer_init,
            # stand-in only (tests read them; SGLang has no such fields):
            "stand_in": True,
            "protocol": protocol,
            "paused": engine.paused,
            **engine.counts(),
            "weight_syncs": engine.weights.summary(),
            "lora": engine.lora.summary() if engine.lora else None,
        }
        return web.json_response(info(**extra))


def add_sglang_routes(routes: web.RouteTableDef, engine: StandinEngine) -> None:
    """SGLang's health, generation, pause and no-op routes."""

    @routes.get("/health")
    @routes.get("/health_generate")
    async def health(_: web.Request) -> web.Response:
        if not engine.alive():
            return error(503, "engine thread is not running")
        return web.json_response({"status": "ok"})

    @routes.post("/generate")
    async def generate(request: web.Request) -> web.Response:
        try:
            body = await json_body(request)
            if body.get("stream"):
                raise ValueError("stream=true is not supported by the CPU stand-in")
            ids = parse_input_ids(body, engine.vocab_size, engine.tokenizer)
            raw = body.get("sampling_params") or {}
            params = SamplingParams.from_json(raw)
            check_context_length(
                len(ids), raw.get("max_new_tokens"), engine.context_length
            )
            if params.stop and engine.skip_tokenizer_init:
                raise ValueError(STOP_STRINGS_MESSAGE)
            start = body.get("logprob_start_len")
            start = -1 if start is None else int(start)
            adapter = await lora_routes.adapter_of(engine, body.get("lora_path"))
        except (ValueError, TypeError) as e:
            return error(400, str(e))
        loop = asyncio.get_running_loop()
        fut, on_done = until_done(loop)
        req = GenRequest(
            input_ids=ids,
            params=params,
            on_done=on_done,
            return_logprob=bool(body.get("return_logprob", False)),
            logprob_start_len=start,
            created=loop.time(),
            lora=adapter,
        )
        if isinstance(body.get("rid"), str):
            req.rid = body["rid"]
        req.cached_tokens = engine.prefix_cache.serve(ids, body.get("lora_path"))
        try:
            await served(engine, req, fut)
        finally:
            if adapter is not None:
                engine.lora.release(adapter)
        if req.error is not None:
            return error(500, f"generation failed: {req.error!r}")
        return web.json_response(
            build_response(
                req,
                engine.tokenizer,
                engine.n_updates,
                loop.time(),
                with_text=not engine.skip_tokenizer_init,
            )
        )

    @routes.post("/pause_generation")
    async def pause(request: web.Request) -> web.Response:
        try:
            mode = (await json_body(request)).get("mode", "abort")
            done = engine.pause(mode)
        except ValueError as e:
            return fail(400, str(e))
        n = await asyncio.wrap_future(done)
        return ok(f"paused ({mode}); aborted {n} request(s)")

    @routes.post("/continue_generation")
    async def resume(_: web.Request) -> web.Response:
        engine.resume()
        return ok("resumed")

    @routes.post("/flush_cache")
    async def flush(_: web.Request) -> web.Response:
        engine.prefix_cache.clear()
        return ok("cache flushed")

    @routes.post("/release_memory_occupation")
    @routes.post("/resume_memory_occupation")
    async def noop(request: web.Request) -> web.Response:
        return ok(f"{request.path}: no-op on the CPU stand-in")

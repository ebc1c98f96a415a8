"""The stand-in server in vLLM mode (``--protocol vllm``): AReaL's vLLM server.

AReaL 1.0.4 launches vLLM through its own extension,
``areal/engine/vllm_ext/areal_vllm_server.py``, and ``RemotevLLMEngine`` calls
its routes; these answer as it does, over the stand-in's engine:

* ``/v1/completions`` (``standin.vllm_protocol``) waits while generation is
  paused (the extension's ``_wait_if_paused`` gate), then generates;
* ``/areal_pause_generation`` closes that gate and pauses the engine in vLLM's
  ``abort`` mode (``pause_generation(wait_for_inflight_requests=False)``):
  running and queued requests end with ``finish_reason: "abort"`` and the
  tokens made so far, which AReaL resubmits; ``/areal_continue_generation``
  resumes and opens the gate;
* ``/areal_update_weights`` (disk) and ``/areal_update_weights_xccl`` abort what
  runs (the extension pauses in abort mode around each update), load, and
  leave the gate as it was; ``/areal_init_weights_update_group`` joins the
  trainer's group and ``/areal_set_update_weight_meta`` records the next
  bucket's names, dtypes and shapes (the gloo machinery of ``weight_routes``);
* each control route answers the extension's ``{"success", "message"}`` with
  one line per TP rank (``TP rank: 0 success``), 200 or 400;
* ``/health`` is vLLM's empty 200; ``/v1/models`` lists the served model;
  ``/sleep`` and ``/wake_up`` are no-ops on CPU.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from standin.engine import StandinEngine
from standin.replies import json_body, served, until_done
from standin.vllm_protocol import (
    CompletionRequest,
    VllmRefusal,
    check_model_len,
    completion_params,
    completion_response,
    error_response,
    prompt_ids,
    refusal_response,
)
from standin.weight_routes import WeightGroups, load_from_disk

logger = logging.getLogger("StandinServer")


def rank_reply(success: bool, reason: str = "") -> web.Response:
    """The extension's ``build_response`` for the stand-in's one TP rank."""
    line = (
        "TP rank: 0 success\n" if success else f"TP rank: 0 failed. reason: {reason}\n"
    )
    return web.json_response(
        {"success": success, "message": line}, status=200 if success else 400
    )


def rank_route(
    handler: Callable[[web.Request], Awaitable[None]],
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """A weight route answered as the extension answers: ``rank_reply(True)``
    when ``handler`` returns, ``rank_reply(False, repr(error))`` when it raises."""

    @functools.wraps(handler)
    async def route(request: web.Request) -> web.Response:
        try:
            await handler(request)
        except Exception as e:
            return rank_reply(False, repr(e))
        return rank_reply(True)

    return route


def control_reply(message: str) -> web.Response:
    """The extension's ``to_json_response(True, message)``."""
    return web.json_response({"success": True, "message": message})


def add_vllm_routes(routes: web.RouteTableDef, engine: StandinEngine) -> None:
    """AReaL's vLLM extension's routes over ``engine``."""
    running = asyncio.Event()  # the extension's _generation_run_event
    running.set()
    groups = WeightGroups(engine)
    bucket: dict[str, Any] = {}  # the meta of the next xccl bucket

    @routes.get("/health")
    async def health(_: web.Request) -> web.Response:
        if not engine.alive():
            return error_response(500, "engine thread is not running")
        return web.Response(status=200)

    @routes.get("/v1/models")
    async def models(_: web.Request) -> web.Response:
        card = {
            "id": engine.served_name, "object": "model", "owned_by": "vllm",
            "root": engine.served_name, "max_model_len": engine.context_length,
        }  # fmt: skip
        return web.json_response({"object": "list", "data": [card]})

    @routes.post("/v1/completions")
    async def completions(request: web.Request) -> web.Response:
        await running.wait()
        try:
            body = await json_body(request)
            model = body.get("model")
            if model not in (None, "", engine.served_name):
                raise VllmRefusal(f"The model `{model}` does not exist.", status=404)
            ids = prompt_ids(body, engine.vocab_size)
            params = completion_params(body)
            params.max_new_tokens = check_model_len(
                len(ids), body.get("max_tokens"), engine.context_length
            )
            if params.stop and engine.skip_tokenizer_init:
                raise VllmRefusal("stop strings need the tokenizer", "stop")
        except VllmRefusal as e:
            return refusal_response(e)
        except (ValueError, TypeError) as e:
            return error_response(400, str(e))
        loop = asyncio.get_running_loop()
        done, on_done = until_done(loop)
        req = CompletionRequest(
            input_ids=ids,
            params=params,
            on_done=on_done,
            created=loop.time(),
            logprobs=body.get("logprobs"),
            as_token_ids=bool(body.get("return_tokens_as_token_ids", False)),
        )
        await served(engine, req, done)
        if req.error is not None:
            return error_response(500, f"generation failed: {req.error!r}")
        reply = completion_response(
            req, engine.tokenizer, engine.served_name, not engine.skip_tokenizer_init
        )
        return web.json_response(reply)

    @routes.post("/areal_pause_generation")
    async def pause(_: web.Request) -> web.Response:
        running.clear()
        n = await asyncio.wrap_future(engine.pause("abort"))
        logger.info(f"generation paused; aborted {n} request(s)")
        return control_reply("Generation paused and all requests aborted")

    @routes.post("/areal_continue_generation")
    async def resume(_: web.Request) -> web.Response:
        engine.resume()
        running.set()
        return control_reply("Generation continued")

    @routes.post("/areal_update_weights")
    @rank_route
    async def update_from_disk(request: web.Request) -> None:
        body = await json_body(request)
        await load_from_disk(engine, body.get("model_path"), abort=True)

    @routes.post("/areal_init_weights_update_group")
    @rank_route
    async def init_group(request: web.Request) -> None:
        body = await json_body(request)
        args = dict(
            master_address=str(body["master_address"]),
            master_port=int(body["master_port"]),
            rank=int(body["rank_offset"]),  # + the TP rank (one rank here)
            world_size=int(body["world_size"]),
            backend=str(body["backend"]),
        )
        await groups.join(str(body["group_name"]), **args)

    @routes.post("/areal_set_update_weight_meta")
    @rank_route
    async def set_meta(request: web.Request) -> None:
        body = await json_body(request)
        bucket.update(
            names=list(body["names"]),
            dtypes=list(body["dtypes"]),
            shapes=[list(s) for s in body["shapes"]],
            group=str(body["group_name"]),
        )

    @routes.post("/areal_update_weights_xccl")
    @rank_route
    async def update_xccl(_: web.Request) -> None:
        meta = dict(bucket)
        if meta.get("group") not in groups.groups:
            raise RuntimeError("no weight-update group or meta set")
        await groups.receive(
            meta["group"], meta["names"], meta["dtypes"], meta["shapes"], True
        )

    @routes.post("/sleep")
    @routes.post("/wake_up")
    async def noop(_: web.Request) -> web.Response:
        return web.Response(status=200)

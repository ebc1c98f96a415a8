"""CPU STAND-IN for an SGLang server: for tests and CPU smoke runs, NOT a production engine.

It speaks the subset of SGLang's HTTP protocol that AReaL 1.0.4's
``RemoteSGLangEngine`` uses (``/health``, ``/generate``, ``/pause_generation``,
``/continue_generation``, ``/update_weights_from_disk``, ...), backed by a
Hugging Face causal LM in float32 on CPU (see ``local_engine``). Use it with
``actor.weight_update_mode=disk``; NCCL/xccl weight updates need real SGLang.

Behaviour notes:

* Logprobs follow SGLang's default convention (see ``local_protocol``).
* ``/pause_generation`` aborts running requests (they return the tokens made
  so far with ``finish_reason.type == "abort"``); requests that arrive while
  paused wait in the queue until ``/continue_generation`` (as SGLang does),
  so AReaL's client, which resubmits aborted requests at once, does not spin.

    python -m standin.server --model-path DIR --port 30000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import torch
from aiohttp import web
from transformers.utils import logging as hf_logging

from standin import faults
from standin.engine import GenRequest, StandinEngine
from standin.model import weights_checksum, weights_digest
from standin.protocol import (
    SamplingParams,
    build_response,
    parse_input_ids,
)

# stdlib logging, not areal.utils.logging: importing areal costs 10-20 s of
# start-up, and the stand-in server must come up fast in tests.
logger = logging.getLogger("StandinServer")

XCCL_MESSAGE = (
    "This CPU stand-in cannot do NCCL/xccl weight updates; they need a real "
    "SGLang server on GPU. Use actor.weight_update_mode=disk."
)


def _error(status: int, message: str) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "code": status}}, status=status
    )


def _fail(status: int, message: str) -> web.Response:
    return web.json_response({"success": False, "message": message}, status=status)


def _ok(message: str = "", **extra: Any) -> web.Response:
    return web.json_response({"success": True, "message": message, **extra})


async def _json_body(request: web.Request) -> dict[str, Any]:
    if not request.can_read_body:
        return {}
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"request body is not valid JSON: {e}") from e
    if not isinstance(body, dict):
        raise ValueError("request body must be a JSON object")
    return body


def build_app(engine: StandinEngine, middlewares: list = ()) -> web.Application:
    """The aiohttp application serving ``engine`` (``middlewares``: see ``faults``)."""
    app = web.Application(
        client_max_size=256 * 1024 * 1024, middlewares=list(middlewares)
    )
    routes = web.RouteTableDef()

    @routes.get("/health")
    @routes.get("/health_generate")
    async def health(_: web.Request) -> web.Response:
        if not engine.alive():
            return _error(503, "engine thread is not running")
        return web.json_response({"status": "ok"})

    def info(**extra: Any) -> dict[str, Any]:
        return {"model_path": engine.model_path, "n_updates": engine.n_updates, **extra}

    @routes.get("/get_model_info")
    @routes.get("/model_info")
    async def model_info(_: web.Request) -> web.Response:
        extra = {"tokenizer_path": engine.model_path, "is_generation": True}
        return web.json_response(info(**extra))

    @routes.get("/get_server_info")
    async def server_info(_: web.Request) -> web.Response:
        extra = {"paused": engine.paused, "stand_in": True, **engine.counts()}
        return web.json_response(info(**extra))

    @routes.post("/generate")
    async def generate(request: web.Request) -> web.Response:
        try:
            body = await _json_body(request)
            if body.get("stream"):
                raise ValueError("stream=true is not supported by the CPU stand-in")
            ids = parse_input_ids(
                body, engine.vocab_size, engine.max_len, engine.tokenizer
            )
            params = SamplingParams.from_json(body.get("sampling_params"))
            start = body.get("logprob_start_len")
            start = -1 if start is None else int(start)
        except (ValueError, TypeError) as e:
            return _error(400, str(e))
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()

        def _resolve(r: GenRequest) -> None:
            if not fut.done():
                fut.set_result(r)

        req = GenRequest(
            input_ids=ids,
            params=params,
            on_done=lambda r: loop.call_soon_threadsafe(_resolve, r),
            return_logprob=bool(body.get("return_logprob", False)),
            logprob_start_len=start,
            created=loop.time(),
        )
        if isinstance(body.get("rid"), str):
            req.rid = body["rid"]
        engine.submit(req)
        try:
            await fut
        except asyncio.CancelledError:
            req.cancelled = True
            raise
        if req.error is not None:
            return _error(500, f"generation failed: {req.error!r}")
        return web.json_response(
            build_response(req, engine.tokenizer, engine.n_updates, loop.time())
        )

    @routes.post("/pause_generation")
    async def pause(request: web.Request) -> web.Response:
        n = await asyncio.wrap_future(engine.pause())
        return _ok(f"paused; aborted {n} running request(s)")

    @routes.post("/continue_generation")
    async def resume(_: web.Request) -> web.Response:
        engine.resume()
        return _ok("resumed")

    @routes.post("/update_weights_from_disk")
    async def update_weights(request: web.Request) -> web.Response:
        try:
            body = await _json_body(request)
        except ValueError as e:
            return _fail(400, str(e))
        path = body.get("model_path")
        if not isinstance(path, str) or not (Path(path) / "config.json").is_file():
            return _fail(400, f"model_path {path!r} is not a HF model directory")
        abort = bool(body.get("abort_all_requests", False))
        try:
            msg = await asyncio.wrap_future(engine.update_weights(path, abort))
        except Exception as e:
            return _fail(400, f"failed to load weights from {path}: {e}")
        logger.info(msg)
        return _ok(msg, num_paused_requests=0)

    @routes.post("/flush_cache")
    @routes.post("/release_memory_occupation")
    @routes.post("/resume_memory_occupation")
    async def noop(request: web.Request) -> web.Response:
        return _ok(f"{request.path}: no-op on the CPU stand-in")

    @routes.post("/init_weights_update_group")
    @routes.post("/update_weights_from_distributed")
    @routes.post("/update_weights_from_tensor")
    async def xccl(_: web.Request) -> web.Response:
        return _fail(400, XCCL_MESSAGE)

    @routes.post("/load_lora_adapter")
    @routes.post("/unload_lora_adapter")
    async def lora(_: web.Request) -> web.Response:
        return _fail(400, "LoRA adapters are not supported by the CPU stand-in")

    @routes.get("/weights_checksum")
    async def checksum(_: web.Request) -> web.Response:
        fn = lambda: weights_checksum(engine.model)  # noqa: E731
        value = await asyncio.wrap_future(engine.run_command(fn))
        return web.json_response(info(checksum=value))

    @routes.get("/weights_digest")
    async def digest(_: web.Request) -> web.Response:
        fn = lambda: weights_digest(engine.model)  # noqa: E731
        value = await asyncio.wrap_future(engine.run_command(fn))
        return web.json_response(info(digest=value))

    app.add_routes(routes)
    return app


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def _watch_parent(pid: int, stop: asyncio.Event) -> None:
    is_parent = os.getppid() == pid
    while not stop.is_set():
        if not _pid_alive(pid) or (is_parent and os.getppid() != pid):
            logger.warning(f"Parent process {pid} is gone; shutting down")
            stop.set()
            return
        await asyncio.sleep(1.0)


async def serve(args: argparse.Namespace) -> None:
    """Run the server until SIGTERM/SIGINT (or the watched parent exits)."""
    if not (Path(args.model_path) / "config.json").is_file():
        raise SystemExit(f"--model-path {args.model_path}: no config.json there")
    torch.set_num_threads(1)
    hf_logging.disable_progress_bar()
    engine = StandinEngine(
        args.model_path, seed=args.seed, max_batch_size=args.max_batch_size
    )
    engine.start()

    async def digest() -> tuple[str, str]:
        fn = lambda: (engine.model_path, weights_digest(engine.model))  # noqa: E731
        return await asyncio.wrap_future(engine.run_command(fn))

    app = build_app(engine, faults.middlewares(args, digest))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    port = sock.getsockname()[1]
    await web.SockSite(runner, sock).start()
    logger.info(
        f"CPU stand-in SGLang server on http://{args.host}:{port} ({args.model_path})"
    )
    if args.port_file:
        tmp = Path(args.port_file + ".tmp")
        tmp.write_text(
            json.dumps({"host": args.host, "port": port, "pid": os.getpid()})
        )
        tmp.replace(args.port_file)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    watcher = None
    if args.parent_pid:
        watcher = asyncio.create_task(_watch_parent(args.parent_pid, stop))
    await stop.wait()
    logger.info("Shutting down")
    if watcher is not None:
        watcher.cancel()
    await asyncio.to_thread(engine.stop)
    await runner.cleanup()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="CPU stand-in for an SGLang server (tests and CPU smoke runs "
        "only; NOT a production inference engine). Serves the SGLang HTTP subset "
        "used by AReaL's RemoteSGLangEngine from a HF causal LM on CPU."
    )
    ap.add_argument("--model-path", required=True, help="HF model directory")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True, help="TCP port (0 = any free)")
    ap.add_argument("--seed", type=int, default=0, help="sampling seed")
    ap.add_argument("--max-batch-size", type=int, default=32)
    ap.add_argument(
        "--port-file", default=None, help="write the bound port here (JSON)"
    )
    ap.add_argument(
        "--parent-pid", type=int, default=0, help="exit when this process is gone"
    )
    faults.add_arguments(ap)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s: %(message)s",
        stream=sys.stdout,
    )
    asyncio.run(serve(parse_args(argv)))
    logger.info("Stopped")


if __name__ == "__main__":
    main()
    # Skip the interpreter's slow teardown (~3 s of library atexit work):
    # the engine and sockets are already closed.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)

"""CPU STAND-IN for an SGLang server: for tests and CPU smoke runs, NOT a production engine.

It speaks the subset of SGLang 0.5.10's HTTP protocol that AReaL 1.0.4's
``RemoteSGLangEngine`` uses (``/health``, ``/generate``, ``/pause_generation``,
``/continue_generation``, the weight updates from disk and over a gloo process
group, LoRA adapters (``lora_routes``), ...; the routes are ``app``'s), backed
by a Hugging Face causal LM in float32 on CPU (see ``engine``). Where it can,
it behaves as SGLang does, messages included:

* Logprobs follow SGLang's default convention (see ``protocol``).
* A prompt plus its ``max_new_tokens`` must stay below ``--context-length``
  (default: the model's ``max_position_embeddings``); otherwise 400.
* ``/pause_generation`` in mode "abort" (the default) ends running requests
  (they return the tokens made so far with ``finish_reason.type == "abort"``)
  and queued ones; requests that arrive while paused wait until
  ``/continue_generation``, so AReaL's client, which resubmits aborted
  requests at once, does not spin.
* With ``--skip-tokenizer-init`` (AReaL's setting) stop strings are refused,
  since SGLang cannot honour them then; ``null`` stop token ids are ignored.

With ``--protocol vllm`` it answers as AReaL's vLLM server extension instead
(``/v1/completions``, ``/areal_*``; see ``vllm_routes`` and ``vllm_protocol``).

    python -m standin.server --model-path DIR --port 30000 [--protocol vllm]
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

import torch
from aiohttp import web
from transformers.utils import logging as hf_logging

from standin import faults, lora_routes
from standin.app import PROTOCOLS, build_app
from standin.engine import StandinEngine
from standin.model import weights_digest

# stdlib logging, not areal.utils.logging: importing areal costs 10-20 s of
# start-up, and the stand-in server must come up fast in tests.
logger = logging.getLogger("StandinServer")


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
        args.model_path,
        seed=args.seed,
        max_batch_size=args.max_batch_size,
        context_length=args.context_length,
        skip_tokenizer_init=args.skip_tokenizer_init,
    )
    engine.lora = lora_routes.from_args(engine.model, args)
    lora_routes.preload(engine.lora, args.lora_paths)
    engine.start()

    async def digest() -> tuple[str, str]:
        fn = lambda: (engine.model_path, weights_digest(engine.model))  # noqa: E731
        return await asyncio.wrap_future(engine.run_command(fn))

    app = build_app(engine, faults.middlewares(args, digest), args.protocol)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    port = sock.getsockname()[1]
    await web.SockSite(runner, sock).start()
    name = "vLLM (AReaL's extension)" if args.protocol == "vllm" else "SGLang"
    logger.info(
        f"CPU stand-in {name} server on http://{args.host}:{port} ({args.model_path})"
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
    if args.report_file:
        write_report(engine, args.report_file, port, args.protocol)


def write_report(
    engine: StandinEngine, path: str, port: int, protocol: str = "sglang"
) -> None:
    """What the server served at exit (stand-in only; read by the e2e tests,
    where AReaL launches and stops the server itself)."""
    report = {
        "pid": os.getpid(),
        "port": port,
        "protocol": protocol,
        "model_path": engine.model_path,
        "context_length": engine.context_length,
        "n_updates": engine.n_updates,
        "weight_syncs": engine.weights.summary(),
        "digest": weights_digest(engine.model),
        "lora": engine.lora.summary() if engine.lora else None,
    }
    tmp = Path(path + ".tmp")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text(json.dumps(report, indent=1))
    tmp.replace(path)
    logger.info(f"wrote {path}")


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
        "--protocol",
        choices=PROTOCOLS,
        default="sglang",
        help="the HTTP protocol: SGLang's, or AReaL's vLLM server's (vllm_routes)",
    )
    ap.add_argument(
        "--context-length",
        type=int,
        default=None,
        help="SGLang's context length (default: the model's max_position_embeddings)",
    )
    ap.add_argument(
        "--skip-tokenizer-init",
        action="store_true",
        help="as SGLang: no text output, stop strings refused",
    )
    ap.add_argument(
        "--report-file",
        default=None,
        help="stand-in only: at exit, write the served weights' digest and the "
        "weight updates received here (JSON)",
    )
    ap.add_argument(
        "--port-file", default=None, help="write the bound port here (JSON)"
    )
    ap.add_argument(
        "--parent-pid", type=int, default=0, help="exit when this process is gone"
    )
    lora_routes.add_arguments(ap)
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

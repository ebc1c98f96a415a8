"""Serve a MemAgent model through OpenAI's chat API: any application sends a
document of any length and a question, MemAgent reads it chunk by chunk.

    python3 examples/serve.py --config config_eval.yaml actor.path=CKPT \\
        [overrides] [--host H] [--port P] [--api-key-file FILE]

``POST /v1/chat/completions`` (the last user message is the question, the
messages before it, or ``memagent.document``, the document), ``GET /v1/models``,
``GET /health``. Each request runs ``ask.py``'s episode (the eval's workflow,
prompts, chunking and answer protocol, the same ``--config`` and overrides)
against the model servers: ``scheduler.type=local`` has AReaL launch SGLang or
vLLM, ``AREAL_LLM_SERVER_ADDRS=host:port`` names running ones. Listens on
127.0.0.1 unless told otherwise; any other address needs an API key
(``MEMAGENT_API_KEY``, or a file: ``--api-key-file``, ``MEMAGENT_API_KEY_FILE``).
The model servers are probed; launched ones that die are started again.
docs/serve.md has the commands, the limits (``serve:``) and a run without a
GPU; docs/serve-faults.md what each fault gives a caller.
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys

import uvicorn
from areal.utils import logging

from memagent_workflow.config import workflow_kwargs
from memagent_workflow.eval.ask import AskWorkflow
from memagent_workflow.eval.engine import ClusterInference
from memagent_workflow.infra.paths import load_entry_config, make_shared_folders
from memagent_workflow.prompts.order import check_prompt_order
from memagent_workflow.serve.admission import Admission
from memagent_workflow.serve.app import Service
from memagent_workflow.serve.auth import api_key, check_bind
from memagent_workflow.serve.config import MemAgentServeConfig
from memagent_workflow.serve.episode import EpisodeRunner
from memagent_workflow.serve.health import EngineHealth, http_probe
from memagent_workflow.serve.limits import Limits
from memagent_workflow.serve.relaunch import ServedEngine
from memagent_workflow.serve.shutdown import ServiceServer, start_reaper, stop_reaper

logger = logging.getLogger("MemAgentServe")
SECTION = "serve"


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """This script's own flags; the rest is ``--config`` and its overrides."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", help="listen here (serve.host; 127.0.0.1)")
    parser.add_argument("--port", type=int, help="and here (serve.port; 0: any)")
    parser.add_argument(
        "--api-key-file",
        help="a file whose first line is the key callers must send (else "
        "MEMAGENT_API_KEY_FILE, else MEMAGENT_API_KEY)",
    )
    return parser.parse_known_args(argv)


class Stopped(Exception):
    """SIGTERM or SIGINT: stop serving, stop the engine, exit 0."""


def stop(signum: int, frame: object) -> None:
    raise Stopped(signal.Signals(signum).name)


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the engine starts (a taken port
    fails at once)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host.strip("[]"), port), family=family)


def main(
    argv: list[str],
    *,
    config_cls: type[MemAgentServeConfig] = MemAgentServeConfig,
    inference_cls: type[ClusterInference] = ClusterInference,
) -> None:
    """Check the settings, start the engine, serve until interrupted."""
    args, rest = parse_args(argv)
    # serve.* is in no eval config's YAML (eval.py would refuse the section):
    # its overrides add the key (hydra's ++)
    rest = [f"++{a}" if a.startswith(f"{SECTION}.") else a for a in rest]
    config = load_entry_config(rest, config_cls, __file__)
    cfg = config.serve
    cfg.host = args.host if args.host is not None else cfg.host
    cfg.port = args.port if args.port is not None else cfg.port
    try:
        key = api_key(args.api_key_file)
        check_bind(cfg.host, key)
        sock = listen(cfg.host, cfg.port)
    except (ValueError, OSError) as exc:
        logger.error(f"refused: {exc}")
        sys.exit(2)
    make_shared_folders(config.cluster)
    inference = inference_cls(config)
    sets = config.eval.lengths, config.eval.tasks
    config.eval.lengths, config.eval.tasks = [], []  # no eval file is made
    inference.prepare()  # before any server: the model may be built here
    config.eval.lengths, config.eval.tasks = sets  # a launched worker rebuilds it
    try:
        workflow = AskWorkflow(**workflow_kwargs(config, config.gconfig, trace=True))
        check_prompt_order(config.actor.path, workflow.prompts.memory_update, "serve")
    except ValueError as exc:  # chunk size, prompts (and their order): the knob
        logger.error(f"refused: {exc}")
        sys.exit(2)
    workflow.engine_retry_s = cfg.engine_retry_s  # the service's, not the eval's
    # uvicorn stops on either signal, then raises it again (here: Stopped),
    # so that the engine is stopped on the way out
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)
    reaper = start_reaper()  # what is launched dies with this process
    try:
        with ServedEngine(config, inference) as engine:
            serve(config, engine, workflow, key, sock)
    except Stopped as why:
        logger.info(f"{why}: stopping")
    finally:
        stop_reaper(reaper)
    logger.info("MemAgent service stopped")


def serve(
    config: MemAgentServeConfig,
    engine: ServedEngine,
    workflow: AskWorkflow,
    key: str | None,
    sock: socket.socket,
) -> None:
    """Serve on ``sock`` until a signal; the engine probed meanwhile."""
    cfg = config.serve
    health = EngineHealth(
        lambda: engine.addresses,
        http_probe(cfg.probe_interval_s),
        cfg.probe_interval_s,
        cfg.probe_failures,
        engine.restart if engine.launched else None,
        cfg.max_restarts,
    )
    admission = Admission(cfg.max_episodes, cfg.max_queue, cfg.max_queue_bytes)
    service = Service(
        EpisodeRunner(workflow, engine, cfg.call_timeout_s, health),
        Limits(cfg, workflow),
        admission,
        cfg.model_name,
        key,
        health,
    )
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    logger.info(
        f"MemAgent service at http://{shown}:{port}/v1 (model {cfg.model_name}, "
        f"{'an API key' if key else 'no API key'}, {cfg.max_episodes} episodes "
        f"at once, {cfg.max_queue} queued; model servers "
        f"{'launched here' if engine.launched else 'named by address'}: "
        f"{', '.join(engine.addresses) or '-'})"
    )
    server = ServiceServer(
        uvicorn.Config(
            service.app(),
            log_config=None,
            access_log=False,
            loop="asyncio",
            lifespan="off",
            timeout_graceful_shutdown=cfg.shutdown_timeout_s,
        ),
        admission,
        health,
    )
    server.run(sockets=[sock])


if __name__ == "__main__":
    main(sys.argv[1:])

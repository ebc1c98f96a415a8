"""AReaL's SGLang and vLLM engines, launching the CPU stand-in where they would
launch SGLang or AReaL's vLLM server.

In single-controller mode AReaL's rollout worker picks a host and port and
calls its backend's ``launch_server(server_args)``; the SGLang backend builds
``python -m sglang.launch_server ...`` from the arguments. `StandinBackend`
keeps every other part of SGLang's protocol (AReaL's own request builders and
response parsers) and starts ``python -m standin.server`` instead, honouring
the server arguments the stand-in understands. `StandinSGLangEngine` is
AReaL's `RemoteSGLangEngine` with that backend: the rollout controller sends
the class to its workers by import path, so it must live in a module.
`StandinvLLMEngine` is the same for AReaL's `RemotevLLMEngine`: its
`StandinvLLMBackend` keeps AReaL's ``VLLMBackend`` requests and parsers and
starts the stand-in with ``--protocol vllm`` (``standin.vllm_routes``), honouring
the arguments AReaL builds from ``vllm:`` (`vLLMConfig.build_args`: model, seed,
``max_model_len``, ``max_num_seqs``, ``skip_tokenizer_init``).

AReaL picks the server's port with Python's ``random``, seeded by
``config.seed`` in the rollout worker: two runs with the same seed pick the
same port. The stand-in binds a port the OS chooses instead (free by
construction) and reports it; `StandinBackend` writes it back into
``server_args["port"]``, where AReaL reads the address after
``launch_server`` returns (pinned by tests/unit/test_standin_trainer_pins.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from areal.api.cli_args import InferenceEngineConfig
from areal.engine import RemoteSGLangEngine, RemotevLLMEngine
from areal.engine.sglang_remote import SGLangBackend
from areal.engine.vllm_remote import VLLMBackend
from areal.infra import RemoteInfEngine
from areal.utils.network import format_hostport

from memagent_workflow.infra.engines import server_args
from standin.launch import probe_flags, server_args_of, server_flags


def standin_command(server_args: dict[str, Any], protocol: str = "sglang") -> list[str]:
    """``python -m standin.server ...`` for AReaL's server arguments."""
    key = "model" if protocol == "vllm" else "model_path"
    if not server_args.get(key):
        raise ValueError(f"server_args lack {key} ({protocol}.{key})")
    cmd = [sys.executable, "-m", "standin.server", *server_flags(server_args, protocol)]
    # The stand-in exits with the worker that launched it.
    return cmd + probe_flags() + ["--parent-pid", str(os.getpid())]


def _wait_healthy(proc: subprocess.Popen, url: str, timeout: float = 300.0) -> None:
    """Return once ``/health`` answers; raise at once if the server exits.

    (AReaL's own wait polls ``/health`` until ``rollout.setup_timeout`` even
    when the server process is gone.)
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"the stand-in server exited with code {proc.returncode} during "
                "start-up; its output is in this worker's log"
            )
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.25)


def _wait_port(proc: subprocess.Popen, port_file: Path, timeout: float = 300.0) -> int:
    """The port the server ``proc`` bound, once it reports it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"the stand-in server exited with code {proc.returncode} during "
                "start-up; its output is in this worker's log"
            )
        try:
            report = json.loads(port_file.read_text())
            if report["pid"] == proc.pid:
                return int(report["port"])
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.25)
    raise TimeoutError(f"the stand-in server bound no port within {timeout:.0f} s")


def launch_standin(server_args: dict[str, Any], protocol: str) -> subprocess.Popen:
    """Start the stand-in on a port the OS picks, written back into
    ``server_args["port"]``; return once it answers."""
    env = os.environ.copy()
    env.setdefault("TORCHDYNAMO_DISABLE", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")
    env["PYTHONUNBUFFERED"] = "1"
    with tempfile.TemporaryDirectory(prefix="standin-port-") as tmp:
        port_file = Path(tmp) / "port.json"
        cmd = standin_command({**server_args, "port": 0}, protocol)
        cmd += ["--port-file", str(port_file)]
        proc = subprocess.Popen(cmd, env=env, stdout=sys.stdout, stderr=sys.stdout)
        try:
            server_args["port"] = _wait_port(proc, port_file)
        except BaseException:
            proc.kill()
            raise
    _wait_healthy(
        proc, f"http://{format_hostport(server_args['host'], server_args['port'])}"
    )
    return proc


class StandinBackend(SGLangBackend):
    """SGLang's HTTP protocol; ``launch_server`` starts the CPU stand-in."""

    def launch_server(self, server_args: dict[str, Any]) -> subprocess.Popen:
        return launch_standin(server_args, "sglang")


class StandinvLLMBackend(VLLMBackend):
    """AReaL's vLLM protocol; ``launch_server`` starts the CPU stand-in in its
    vLLM mode."""

    def launch_server(self, server_args: dict[str, Any]) -> subprocess.Popen:
        return launch_standin(server_args, "vllm")


class StandinSGLangEngine(RemoteSGLangEngine):
    """`RemoteSGLangEngine` whose launched servers are CPU stand-ins."""

    def __init__(self, config: InferenceEngineConfig):
        super().__init__(config)
        self._engine = RemoteInfEngine(config, StandinBackend())


class StandinvLLMEngine(RemotevLLMEngine):
    """`RemotevLLMEngine` whose launched servers are CPU stand-ins (vLLM mode)."""

    def __init__(self, config: InferenceEngineConfig):
        super().__init__(config)
        self._engine = RemoteInfEngine(config, StandinvLLMBackend())


# The rollout engine of each protocol the stand-in speaks (``rollout.backend``).
ENGINES = {"sglang": StandinSGLangEngine, "vllm": StandinvLLMEngine}


def launched_server_args(
    config: Any, backend: str, tp_size: int, pp_size: int = 1
) -> dict:
    """A launched stand-in's arguments as AReaL builds them: from ``vllm:``
    (`vLLMConfig.build_args`, `infra.engines.server_args`) or from ``sglang:``
    (the same keys; AReaL's own builder needs the sglang package)."""
    if backend == "vllm":
        return server_args(config, backend, tp_size, pp_size)
    return server_args_of(config.sglang)

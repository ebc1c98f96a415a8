"""Start and stop the CPU stand-in SGLang server (``local_server``) as a subprocess.

Light on imports (no torch, no areal) so scripts can use it cheaply::

    with StandinServer(model_dir) as srv:
        engine.initialize(addr=srv.addr)
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

_REPO_ROOT = str(Path(__file__).resolve().parents[1])


# Stand-in only, for tests: every stand-in a run starts (by AReaL's rollout
# worker, or the CPU job's own in the one-process mode) writes its exit report
# (served weights' digest, updates received) into REPORT_DIR_ENV's folder and
# takes EXTRA_ARGS_ENV's flags (``--faults``, ``--event-log``; see ``standin.faults``).
REPORT_DIR_ENV = "STANDIN_REPORT_DIR"
EXTRA_ARGS_ENV = "STANDIN_EXTRA_ARGS"
_launches = itertools.count()


def probe_flags() -> list[str]:
    """The flags ``REPORT_DIR_ENV`` and ``EXTRA_ARGS_ENV`` ask for (none unset)."""
    flags = []
    if os.environ.get(REPORT_DIR_ENV):
        name = f"standin-{os.getpid()}-{next(_launches)}.json"
        flags += ["--report-file", os.path.join(os.environ[REPORT_DIR_ENV], name)]
    return flags + shlex.split(os.environ.get(EXTRA_ARGS_ENV, ""))


# SGLang server arguments the stand-in honours, and its flags for them. Every
# other SGLang argument (memory fractions, CUDA graphs, kernels) means nothing on
# CPU; the model is always served in float32.
SERVER_FLAGS = {
    "model_path": "--model-path",
    "host": "--host",
    "port": "--port",
    "random_seed": "--seed",
    "context_length": "--context-length",
    "max_running_requests": "--max-batch-size",
}
# vLLM server arguments (AReaL's `vLLMConfig.build_args`) the stand-in honours in
# its vLLM mode; the rest (memory utilisation, block size, chunked prefill, the
# worker extension) means nothing on CPU.
VLLM_SERVER_FLAGS = {
    "model": "--model-path",
    "host": "--host",
    "port": "--port",
    "seed": "--seed",
    "max_model_len": "--context-length",
    "max_num_seqs": "--max-batch-size",
}


def server_args_of(sglang_config: object) -> dict[str, Any]:
    """An ``sglang:`` config section as SGLang server arguments.

    AReaL's `SGLangConfig.build_args` returns the same keys (and more that the
    stand-in ignores), but first checks that the sglang package, GPU only, is
    installed.
    """
    return {k: v for k, v in asdict(sglang_config).items() if v is not None}


def own_server_args(config: Any, protocol: str) -> dict[str, Any]:
    """For a stand-in a CPU job starts itself: the server arguments AReaL would
    pass a server it launches (context length, skip_tokenizer_init, ...) from
    the ``sglang:`` or ``vllm:`` section, so both launch paths serve alike."""
    if protocol == "vllm":
        args = asdict(config.vllm)
        keys = ("max_model_len", "max_num_seqs", "skip_tokenizer_init")
        return {k: args.get(k) for k in keys}
    args = server_args_of(config.sglang)
    keys = ("context_length", "skip_tokenizer_init", "max_loaded_loras")
    args = {k: args.get(k) for k in keys}
    # LoRA (actor.use_lora): the trainer loads the initial adapter itself, since
    # this server starts before the actor saves it (standin.trainer).
    args["enable_lora"] = bool(getattr(config.actor, "use_lora", False))
    return args


def server_flags(server_args: dict[str, Any], protocol: str = "sglang") -> list[str]:
    """Stand-in command-line flags for SGLang (or vLLM) server arguments."""
    table = VLLM_SERVER_FLAGS if protocol == "vllm" else SERVER_FLAGS
    flags = []
    for key, flag in table.items():
        if server_args.get(key) is not None:
            flags += [flag, str(server_args[key])]
    if server_args.get("skip_tokenizer_init"):
        flags.append("--skip-tokenizer-init")
    if protocol != "vllm":
        return flags + lora_flags(server_args)
    if server_args.get("enable_lora") or server_args.get("lora_modules"):
        raise ValueError("the CPU stand-in serves no LoRA adapters in its vLLM mode")
    return flags + ["--protocol", "vllm"]


def lora_flags(server_args: dict[str, Any]) -> list[str]:
    """Stand-in flags for the LoRA keys of SGLang's server arguments."""
    # SGLang enables LoRA when given adapters at start, as AReaL gives them.
    if not (server_args.get("enable_lora") or server_args.get("lora_paths")):
        return []
    flags = ["--enable-lora"]
    if server_args.get("lora_paths"):
        flags += ["--lora-paths", *map(str, server_args["lora_paths"])]
    for key in ("max_loaded_loras", "max_lora_rank"):
        if server_args.get(key) is not None:
            flags += ["--" + key.replace("_", "-"), str(server_args[key])]
    return flags


def find_free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (racy; prefer ``port=None``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class StandinServer:
    """Handle on a ``python -m standin.server`` subprocess.

    ``port=None`` lets the server bind any free port and report it back.
    The server exits by itself when this (parent) process dies.
    """

    def __init__(
        self,
        model_path: str | Path,
        port: int | None = None,
        host: str = "127.0.0.1",
        seed: int = 0,
        log_file: str | Path | None = None,
        startup_timeout: float = 180.0,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.model_path = str(model_path)
        self.host = host
        self.port = port
        self.seed = seed
        self.startup_timeout = startup_timeout
        self.extra_args = list(extra_args)
        self.log_file = Path(log_file) if log_file else None
        self.proc: subprocess.Popen | None = None
        self._log: IO[bytes] | None = None
        self._tmpdir: tempfile.TemporaryDirectory | None = None

    @property
    def addr(self) -> str:
        """``host:port`` as AReaL's ``initialize(addr=...)`` expects it."""
        if self.port is None:
            raise RuntimeError("server not started")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.addr}"

    def log_tail(self, n: int = 40) -> str:
        """The last ``n`` lines of the server log."""
        if self.log_file is None or not self.log_file.exists():
            return ""
        lines = self.log_file.read_text(errors="replace").splitlines()
        return "\n".join(lines[-n:])

    def start(self) -> StandinServer:
        """Launch the subprocess and wait until ``/health`` answers 200."""
        if self.proc is not None:
            raise RuntimeError("server already started")
        if not (Path(self.model_path) / "config.json").is_file():
            raise FileNotFoundError(f"{self.model_path} holds no config.json")
        self._tmpdir = tempfile.TemporaryDirectory(prefix="local_server_")
        port_file = Path(self._tmpdir.name) / "port.json"
        if self.log_file is None:  # kept after stop() for post-mortems
            fd, name = tempfile.mkstemp(prefix="local_server_", suffix=".log")
            os.close(fd)
            self.log_file = Path(name)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_file, "ab")  # noqa: SIM115 (closed in stop)
        cmd = [
            sys.executable, "-m", "standin.server",
            "--model-path", self.model_path, "--host", self.host,
            "--port", str(self.port or 0), "--seed", str(self.seed),
            "--port-file", str(port_file), "--parent-pid", str(os.getpid()),
            *self.extra_args,
        ]  # fmt: skip
        env = os.environ.copy()
        env.setdefault("TORCHDYNAMO_DISABLE", "1")
        env.setdefault("HF_HUB_OFFLINE", "1")
        env["PYTHONUNBUFFERED"] = "1"
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_REPO_ROOT, env.get("PYTHONPATH")) if p
        )
        self.proc = subprocess.Popen(
            cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env
        )
        try:
            self._wait_ready(port_file)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, port_file: Path) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                raise RuntimeError(
                    f"local server exited with code {rc} during startup; "
                    f"log {self.log_file}:\n{self.log_tail()}"
                )
            if port_file.exists():
                self.port = int(json.loads(port_file.read_text())["port"])
                if self.healthy():
                    return
            time.sleep(0.2)
        raise TimeoutError(
            f"local server not healthy after {self.startup_timeout:.0f}s; "
            f"log {self.log_file}:\n{self.log_tail()}"
        )

    def healthy(self, timeout: float = 2.0) -> bool:
        """True if ``GET /health`` answers 200."""
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=timeout) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM the server, then SIGKILL if it does not exit in ``timeout``."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    def __enter__(self) -> StandinServer:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_standin_server(
    model_path: str | Path,
    port: int | None = None,
    seed: int = 0,
    log_file: str | Path | None = None,
    **kwargs: object,
) -> StandinServer:
    """Start a stand-in server and return its (running) handle."""
    return StandinServer(
        model_path, port=port, seed=seed, log_file=log_file, **kwargs
    ).start()  # type: ignore[arg-type]

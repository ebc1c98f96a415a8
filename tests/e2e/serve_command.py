"""docs/serve.md's blocks (the CPU serve command, the ``curl`` calls, the
``openai`` snippet), as written, and the service as a process: started, found
by its log line, stopped."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.e2e.ask_command import REPO

DOCS = REPO / "docs" / "serve.md"
DOCS_ADDR = "127.0.0.1:8000"  # where the docs' commands listen and call
READY = re.compile(r"MemAgent service at (http://\S+)/v1 ")


def block(marker: str) -> str:
    """The fenced block under ``<!-- marker -->`` in docs/serve.md."""
    text = DOCS.read_text().split(f"<!-- {marker} -->")[1]
    return re.search(r"```\w+\n(.*?)```", text, re.S).group(1)


def serve_line() -> str:
    """The CPU serve command (its ``standin.serve`` line)."""
    return next(
        line for line in block("serve-command").splitlines() if "standin.serve" in line
    )


def at(text: str, base_url: str) -> str:
    """A docs block calling the service at ``base_url`` instead of the docs' port."""
    assert DOCS_ADDR in text, text
    return text.replace(f"http://{DOCS_ADDR}", base_url)


class Service:
    """A serve command run as a process until ``stop``; its output in ``log``."""

    def __init__(self, cmd: str, log: Path, env: dict[str, str] | None = None):
        self.log = log
        env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
        with log.open("w") as out:
            self.proc = subprocess.Popen(
                ["bash", "-c", f"exec {cmd}"], cwd=REPO, env=env, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        try:
            self.base_url = self.wait_ready()
        except BaseException:
            self.stop()  # a service that did not start is not left running
            raise

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, timeout: float = 300) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if found := READY.search(self.text()):
                return found.group(1)
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"the service exited ({self.proc.returncode}):\n{self.text()[-3000:]}"
                )
            time.sleep(0.3)
        raise TimeoutError(f"the service did not start:\n{self.text()[-3000:]}")

    def health(self) -> dict:
        import json

        with urllib.request.urlopen(f"{self.base_url}/health", timeout=10) as r:
            return json.loads(r.read())

    def request_lines(self) -> list[str]:
        """The one log line of each request, in order."""
        return re.findall(r"request chatcmpl-\w+: [^\n]*", self.text())

    def stop(self) -> int:
        """SIGTERM (the service stops its engine), SIGKILL after 30 s."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        return self.proc.returncode


def docs_service(ckpt: Path, root: Path) -> Service:
    """The docs' CPU serve command with ``CKPT=ckpt``, on a free port, its
    files in ``root``."""
    cmd = serve_line()
    assert cmd.startswith("uv run python -m standin.serve "), cmd
    cmd = cmd.replace("uv run python", sys.executable, 1)
    scratch = (
        f" eval.output_dir={root / 'out'} cluster.fileroot={root / 'areal'}"
        f" cluster.name_resolve.nfs_record_root={root / 'nr'} --port 0"
    )
    return Service(cmd + scratch, root / "serve.log", {"CKPT": str(ckpt)})

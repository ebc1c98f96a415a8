"""Two Ray nodes on this machine for e2e tests, started as docs/multi-node.md does.

`RayNodes` runs docs/multi-node.md's cluster command (``uv run python`` = this
interpreter) on a free head port, in the background, and reads what it prints:
the address to give the job (``RAY_ADDRESS``: the tests may run two clusters
at once, and ``ray.init()`` alone joins the one started last) and each node's
name as the job's logs write it and its raylet's pid (to lose the node).
"""

from __future__ import annotations

import contextlib
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import psutil

from standin.launch import find_free_port

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "multi-node.md"
_NODE = re.compile(r"^node (\d+)(?: \(head\))?: (.+?), .*raylet pid (\d+)$")


def doc_command(start: str, section: str = "## Two Ray nodes") -> list[str]:
    """The one command starting ``start`` in the first bash block of
    docs/multi-node.md's ``section`` (continuation lines joined, a trailing
    ``&`` and comments dropped), run by this interpreter."""
    text = DOC.read_text().split(f"\n{section}", 1)[1].split("\n## ", 1)[0]
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    joined = re.sub(r"\\\n\s*", " ", block)
    lines = [line.split("#", 1)[0].strip() for line in joined.splitlines()]
    found = [line for line in lines if start in line]
    assert len(found) == 1, f"{DOC} {section}: {len(found)} commands with {start!r}"
    cmd = shlex.split(found[0].removesuffix("&"))
    while "=" in cmd[0]:  # leading VAR=value: the tests set the environment
        cmd.pop(0)
    assert cmd[:3] == ["uv", "run", "python"], cmd
    return [sys.executable, *cmd[3:]]


@dataclass(frozen=True)
class Node:
    name: str  # host:raylet-port (node id prefix), as the job's logs name it
    raylet_pid: int


class RayNodes:
    """docs/multi-node.md's two-node cluster, started in ``cwd`` with ``env``."""

    def __init__(self, cwd: Path, env: dict[str, str], timeout: float = 240):
        cmd = doc_command("uv run python -m standin.ray_nodes")
        self.port = find_free_port()
        self.proc = subprocess.Popen(
            [*cmd, "--port", str(self.port)],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.address, self.nodes, self.printed = "", [], []
        expected = int(cmd[cmd.index("--nodes") + 1])
        for line in self.proc.stdout:  # the helper gives up after its own timeout
            self.printed.append(line.rstrip())
            if line.startswith("RAY_ADDRESS="):
                self.address = line.split()[0].split("=", 1)[1]
            elif match := _NODE.match(line.rstrip()):
                self.nodes.append(Node(match.group(2), int(match.group(3))))
                if len(self.nodes) == expected:
                    break
        assert len(self.nodes) == expected, "\n".join(self.printed)

    def env(self) -> dict[str, str]:
        """What the job needs to join this cluster rather than another."""
        return {"RAY_ADDRESS": self.address}

    def lose(self, index: int) -> None:
        """Node ``index`` lost as a machine that dies: its raylet and every
        process under it (Ray's workers, the inference server a worker
        started) SIGKILLed at once. Killing the raylet alone leaves its workers
        answering for about a second (measured here), time enough for a fast
        machine to finish a step on a node that is already gone."""
        raylet = psutil.Process(self.nodes[index].raylet_pid)
        for proc in [*raylet.children(recursive=True), raylet]:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.send_signal(signal.SIGKILL)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

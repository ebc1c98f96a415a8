"""Peak GPU memory of each role (the FSDP actor, the inference servers) while
the smoke runs, from ``nvidia-smi``: what each process of the smoke (found by
its mark, `processes`) holds on each GPU, polled every second, the largest
kept per role. A process's role is the ``--role`` of the AReaL worker it is, or
runs under; an SGLang or vLLM server outside a worker is ``rollout``; anything
else (a one-process SPMD trainer) is ``trainer``. Without ``nvidia-smi``
nothing is measured, and the table says so.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Callable

import psutil

from memagent_workflow.smoke.processes import is_marked

QUERY = [
    "nvidia-smi",
    "--query-compute-apps=pid,gpu_uuid,used_memory",
    "--format=csv,noheader,nounits",
]


def parse(text: str) -> list[tuple[int, str, int]]:
    """``(pid, gpu, bytes)`` per line of ``nvidia-smi``'s compute-apps query."""
    found = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3 or not parts[0].isdigit() or not parts[2].isdigit():
            continue
        found.append((int(parts[0]), parts[1], int(parts[2]) * 2**20))
    return found


def role_of(proc: psutil.Process) -> str:
    """The AReaL role of a process or of the worker above it."""
    try:
        chain = [proc, *proc.parents()]
        for p in chain:
            args = p.cmdline()
            if "--role" in args[:-1]:
                return args[args.index("--role") + 1]
        if any(w in " ".join(proc.cmdline()) for w in ("sglang", "vllm")):
            return "rollout"
    except psutil.Error:
        pass
    return "trainer"


class PeakMemory:
    """Polls ``nvidia-smi`` in a thread; ``peaks`` by role, in bytes."""

    def __init__(
        self,
        mark: str,
        query: Callable[[], str] | None = None,
        role: Callable[[psutil.Process], str] = role_of,
        interval_s: float = 1.0,
    ):
        self.mark, self.role, self.interval_s = mark, role, interval_s
        self.available = query is not None or shutil.which("nvidia-smi") is not None
        self.query = query or self._nvidia_smi
        self.peaks: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    @staticmethod
    def _nvidia_smi() -> str:
        out = subprocess.run(QUERY, capture_output=True, text=True, timeout=30)
        return out.stdout if out.returncode == 0 else ""

    def poll(self) -> None:
        for pid, _gpu, used in parse(self.query()):
            try:
                proc = psutil.Process(pid)
            except psutil.Error:
                continue
            if not is_marked(proc, self.mark):
                continue
            role = self.role(proc)
            self.peaks[role] = max(self.peaks.get(role, 0), used)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.poll()
            except (OSError, subprocess.SubprocessError):
                continue

    def __enter__(self) -> PeakMemory:
        if self.available:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

"""How the service stops. On SIGTERM or SIGINT: no new connection, queued
requests answered 503 at once, running ones given ``serve.shutdown_timeout_s``
to finish (then cancelled), the engine's probes stopped; a second signal
stops at once. Whatever the service launched (model servers, AReaL's
workers) dies with it even when it is killed outright: a reaper process
watches it and ends every process it started once it is gone.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from typing import Any

import psutil
import uvicorn

from memagent_workflow.serve.admission import Admission

REAP_EVERY_S = 0.5


class ServiceServer(uvicorn.Server):
    """uvicorn's server, which probes the engine while it serves and closes
    the queue first when it stops."""

    def __init__(self, config: uvicorn.Config, admission: Admission, health: Any):
        super().__init__(config)
        self.admission, self.health = admission, health

    async def serve(self, sockets: list[Any] | None = None) -> None:
        probes = None
        if self.health is not None:
            probes = asyncio.create_task(self.health.run())
        try:
            await super().serve(sockets)
        finally:
            if probes is not None:
                probes.cancel()

    def handle_exit(self, sig: int, frame: Any) -> None:
        """A second SIGTERM or SIGINT while stopping: stop at once."""
        if self.should_exit:
            self.force_exit = True
        super().handle_exit(sig, frame)

    async def shutdown(self, sockets: list[Any] | None = None) -> None:
        self.admission.close()  # the queue's requests are answered 503 now
        await super().shutdown(sockets)


def start_reaper() -> subprocess.Popen:
    """A process that outlives this one by at most ``REAP_EVERY_S`` and then
    ends every process this one started (SIGTERM, SIGKILL 5 s later)."""
    return subprocess.Popen(
        [sys.executable, "-m", "memagent_workflow.serve.shutdown", str(os.getpid())],
        stdin=subprocess.DEVNULL,
    )


def stop_reaper(reaper: subprocess.Popen) -> None:
    """This process is exiting in order: the reaper ends what is left, then itself."""
    reaper.send_signal(signal.SIGUSR1)
    try:
        reaper.wait(15)
    except subprocess.TimeoutExpired:
        reaper.kill()


def end(procs: list[psutil.Process]) -> None:
    """SIGTERM to each, SIGKILL to those alive 5 s later."""
    for proc in procs:
        try:
            proc.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=5)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass


def reap(pid: int) -> None:
    """Watch ``pid``'s descendants until it is gone (or, SIGUSR1, it exits in
    order), then end them."""
    stopping = []
    signal.signal(signal.SIGUSR1, lambda *_: stopping.append(True))
    for sig in (signal.SIGTERM, signal.SIGINT):  # the service's to handle, in order
        signal.signal(sig, signal.SIG_IGN)
    me = os.getpid()
    known: dict[int, psutil.Process] = {}
    try:
        parent = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    while (
        not stopping and parent.is_running() and parent.status() != psutil.STATUS_ZOMBIE
    ):
        try:
            for child in parent.children(recursive=True):
                if child.pid != me:
                    known.setdefault(child.pid, child)
        except psutil.Error:
            break
        time.sleep(REAP_EVERY_S)
    end([p for p in known.values() if p.is_running()])  # is_running: the same process


if __name__ == "__main__":
    reap(int(sys.argv[1]))

"""docs/serve.md's CPU serve command stopped three ways, each leaving no
process of the service behind (the stand-in server it launched, the reaper):

- SIGTERM with a request in flight: the request may finish within
  ``serve.shutdown_timeout_s``, a queued one is answered 503 at once, exit 0;
- a second SIGTERM while it waits: it stops at once;
- SIGKILL: the reaper ends what the service launched.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import sys
import time

import psutil
import pytest

from tests.e2e.ask_command import REPO
from tests.e2e.serve_command import Service, serve_line

NEEDLE = (REPO / "docs" / "needle_64.txt").read_text()
BODY = {"model": "memagent", "temperature": 0,
        "messages": [{"role": "user", "content": NEEDLE},
                     {"role": "user", "content": "what is the code of eve ?"}]}  # fmt: skip


def start(model, root, *overrides: str) -> tuple[Service, list[psutil.Process]]:
    """The docs' command, and every process it runs besides itself."""
    cmd = serve_line().replace("uv run python", sys.executable, 1)
    cmd += (
        f" eval.output_dir={root / 'out'} cluster.fileroot={root / 'areal'}"
        f" cluster.name_resolve.nfs_record_root={root / 'nr'} --port 0 "
        + " ".join(overrides)
    )
    service = Service(cmd, root / "serve.log", {"CKPT": str(model)})
    procs = psutil.Process(service.proc.pid).children(recursive=True)
    names = " ".join(" ".join(p.cmdline()) for p in procs)
    assert "standin.server" in names and "serve.shutdown" in names, names
    return service, procs


def none_left(service: Service, procs: list[psutil.Process], timeout: float = 20):
    deadline = time.monotonic() + timeout
    while any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in procs):
        assert time.monotonic() < deadline, [
            p.cmdline() for p in procs if p.is_running()
        ]
        time.sleep(0.2)
    service.proc.wait(timeout)


def pause(procs: list[psutil.Process]) -> None:
    import urllib.request

    server = next(p for p in procs if "standin.server" in " ".join(p.cmdline()))
    port = next(
        c.laddr.port for c in server.net_connections("tcp") if c.status == "LISTEN"
    )
    req = urllib.request.Request(f"http://127.0.0.1:{port}/pause_generation", b"{}",
                                 {"Content-Type": "application/json"})  # fmt: skip
    urllib.request.urlopen(req, timeout=10).read()


def send(service: Service, body: dict) -> http.client.HTTPConnection:
    host, port = service.base_url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=120)
    conn.request("POST", "/v1/chat/completions", json.dumps(body),
                 {"Content-Type": "application/json"})  # fmt: skip
    return conn


@pytest.mark.parametrize("signals", [1, 2])
def test_sigterm_answers_the_queue_and_leaves_nothing(
    needle_model_dir, tmp_path, signals
):
    service, procs = start(
        needle_model_dir,
        tmp_path,
        "serve.max_episodes=1",
        "serve.shutdown_timeout_s=60",
    )
    pause(procs)  # the running request waits for the engine
    running = send(service, BODY)
    time.sleep(2)
    queued = send(service, BODY)
    time.sleep(1)
    start_ = time.monotonic()
    os.kill(service.proc.pid, signal.SIGTERM)
    reply = queued.getresponse()
    assert reply.status == 503
    assert json.loads(reply.read())["error"]["code"] == "shutting_down"
    if signals == 2:  # a second SIGTERM: no waiting for the running request
        os.kill(service.proc.pid, signal.SIGTERM)
        none_left(service, procs, timeout=30)
        assert time.monotonic() - start_ < 30
    else:  # the running request holds the exit until serve.shutdown_timeout_s
        time.sleep(3)
        assert service.proc.poll() is None
        running.close()  # its client leaves: the service may stop now
        none_left(service, procs, timeout=30)
        assert service.proc.returncode == 0
    assert "MemAgent service stopped" in service.text()


def test_sigkill_leaves_nothing_it_launched(needle_model_dir, tmp_path):
    service, procs = start(needle_model_dir, tmp_path)
    os.kill(service.proc.pid, signal.SIGKILL)
    none_left(service, procs, timeout=20)

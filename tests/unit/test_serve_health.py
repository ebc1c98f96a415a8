"""The service's probe and recovery parts on their own: a server that refuses,
one that accepts and never answers, and one that answers 503, each told in
words; the engine handle that outlives a restart (what ``scheduler.type=local``
relaunches through ``serve_engine``); the reaper that ends what a killed
process started.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from types import SimpleNamespace

import psutil

from memagent_workflow.serve import relaunch
from memagent_workflow.serve.health import http_probe


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_the_probe_says_what_a_server_did_in_words():
    probe = http_probe(0.5)
    refused = f"127.0.0.1:{free_port()}"
    assert (
        await probe(refused) == f"the model server at {refused} refused the connection"
    )
    silent = socket.create_server(("127.0.0.1", 0))  # accepts, never answers
    try:
        addr = f"127.0.0.1:{silent.getsockname()[1]}"
        start = time.monotonic()
        assert (
            await probe(addr)
            == f"the model server at {addr} did not answer within 0.5 s"
        )
        assert time.monotonic() - start < 3
    finally:
        silent.close()

    async def busy(reader, writer):
        await reader.read(1024)
        writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(busy, "127.0.0.1", 0)
    async with server:
        addr = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
        assert await probe(addr) == (
            f"the model server at {addr} answered /health with HTTP 503"
        )


async def test_a_restart_reopens_servers_and_client_behind_one_handle(monkeypatch):
    opened, closed = [], []

    @contextlib.contextmanager
    def serve_engine(config, inference):
        n = len(opened)
        client = SimpleNamespace(
            _engine=SimpleNamespace(
                addresses=[f"h:{n}"], rid_to_address={"r": f"h:{n}"}
            )
        )

        async def agenerate(req):
            return f"answer {n}"

        client.agenerate = agenerate
        opened.append(client)
        try:
            yield client
        finally:
            closed.append(n)

    monkeypatch.setattr(relaunch, "serve_engine", serve_engine)
    inference = SimpleNamespace(launches_servers=lambda: True)
    with relaunch.ServedEngine(SimpleNamespace(), inference) as engine:
        assert engine.launched and engine.addresses == ["h:0"]
        assert await engine.agenerate(None) == "answer 0"
        await engine.restart()
        assert closed == [0] and engine.addresses == ["h:1"]
        assert engine.rid_to_address == {"r": "h:1"}
        assert await engine.agenerate(None) == "answer 1"  # the new client
    assert closed == [0, 1]


def test_the_reaper_ends_what_a_killed_process_started():
    # a parent that starts a long child, then is killed outright
    parent = subprocess.Popen(
        [sys.executable, "-c",
         "import subprocess, sys, time\n"
         "from memagent_workflow.serve.shutdown import start_reaper\n"
         "start_reaper()\n"
         "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
         "print(child.pid, flush=True)\n"
         "time.sleep(600)\n"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    child = psutil.Process(int(parent.stdout.readline()))
    time.sleep(1.5)  # the reaper has seen the child
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(10)
    gone, alive = psutil.wait_procs([child], timeout=15)
    assert child in gone and not alive

"""docs/serve.md's CPU serve command under faults, as a caller sees them
(docs/serve-faults.md): the stand-in server it launched hung (SIGSTOP), then
killed; clients that leave, queued or streaming. One service for the file, on
the warm-started needle model; the server it launched is found among its child
processes.

- A hung server: the request in flight ends with a 503 within the documented
  deadline, ``/health`` is 503 with the cause; the server is started again and
  the next request is answered, the service never restarted.
- A killed server: the same, one more restart counted.
- A queued request whose client disconnects leaves the queue at once; a
  streamed one whose client disconnects stops its episode.
"""

from __future__ import annotations

import http.client
import json
import sys
import time

import openai
import psutil
import pytest

from tests.e2e.ask_command import REPO
from tests.e2e.serve_command import Service, serve_line

NEEDLE = (REPO / "docs" / "needle_64.txt").read_text()
QUESTION = "what is the code of eve ?"
HUNG_DEADLINE_S = 20  # docs/serve-faults.md: a hung server's error comes within 20 s
BODY = {"model": "memagent", "temperature": 0,
        "messages": [{"role": "user", "content": NEEDLE}, {"role": "user", "content": QUESTION}]}  # fmt: skip


@pytest.fixture(scope="module")
def service(needle_model_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("serve_faults")
    cmd = serve_line().replace("uv run python", sys.executable, 1)
    cmd += (
        f" eval.output_dir={root / 'out'} cluster.fileroot={root / 'areal'}"
        f" cluster.name_resolve.nfs_record_root={root / 'nr'} --port 0"
        " serve.max_episodes=1 serve.max_queue=2"
    )
    svc = Service(cmd, root / "serve.log", {"CKPT": str(needle_model_dir)})
    try:
        yield svc
    finally:
        assert svc.stop() == 0, svc.text()[-3000:]


def server_of(service: Service) -> psutil.Process:
    """The stand-in server the service launched (its child process)."""
    children = psutil.Process(service.proc.pid).children(recursive=True)
    servers = [p for p in children if "standin.server" in " ".join(p.cmdline())]
    assert len(servers) == 1, [p.cmdline() for p in children]
    return servers[0]


def server_url(proc: psutil.Process) -> str:
    ports = [c.laddr.port for c in proc.net_connections("tcp") if c.status == "LISTEN"]
    return f"http://127.0.0.1:{ports[0]}"


def health(service: Service) -> tuple[int, dict]:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{service.base_url}/health", timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def wait_for(what, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while not (got := what()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)
    return got


def ask(service: Service):
    client = openai.OpenAI(
        base_url=f"{service.base_url}/v1", api_key="-", max_retries=0
    )
    return client.chat.completions.create(**BODY)


def post(url: str, path: str) -> None:
    import urllib.request

    req = urllib.request.Request(
        f"{url}{path}", b"{}", {"Content-Type": "application/json"}
    )
    urllib.request.urlopen(req, timeout=10).read()


def open_request(service: Service, body: dict) -> http.client.HTTPConnection:
    host, port = service.base_url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.request("POST", "/v1/chat/completions", json.dumps(body),
                 {"Content-Type": "application/json"})  # fmt: skip
    return conn


def restarted_after_fault(service: Service, fault) -> None:
    """``fault(server)``; the request in flight and /health say so in time; the
    server is started again and the next request is answered."""
    pid = service.proc.pid
    before = health(service)[1].get("engine_restarts", 0)
    server = server_of(service)
    post(server_url(server), "/pause_generation")  # the request stays in flight
    conn = open_request(service, BODY)
    wait_for(lambda: health(service)[1]["episodes_running"] == 1)
    start = time.monotonic()
    fault(server)
    reply = conn.getresponse()
    took = time.monotonic() - start
    error = json.loads(reply.read())["error"]
    assert reply.status == 503 and error["code"] == "engine_unavailable", error
    assert (
        took < HUNG_DEADLINE_S and "the model server at 127.0.0.1:" in error["message"]
    )
    status, state = health(service)
    assert status == 503 and state["status"] == "engine_down" and state["cause"]
    wait_for(lambda: health(service)[0] == 200)  # started again by the service
    assert health(service)[1]["engine_restarts"] == before + 1
    assert ask(service).model_extra["memagent"]["chunks"] == 64
    assert service.proc.pid == pid and service.proc.poll() is None


def test_a_hung_server_is_an_error_in_time_then_it_is_restarted(service):
    restarted_after_fault(service, lambda server: server.suspend())


def test_a_killed_server_is_restarted_and_answers_again(service):
    restarted_after_fault(service, lambda server: server.kill())


def test_a_client_that_leaves_the_queue_or_a_stream_frees_its_place(service):
    url = server_url(server_of(service))
    post(url, "/pause_generation")
    try:
        running = open_request(service, BODY)
        wait_for(lambda: health(service)[1]["episodes_running"] == 1)
        queued = open_request(service, {**BODY, "stream": True})
        wait_for(lambda: health(service)[1]["requests_queued"] == 1)
        queued.close()  # leaves the queue at once, not once a slot is free
        wait_for(lambda: health(service)[1]["requests_queued"] == 0, timeout=5)
        assert health(service)[1]["episodes_running"] == 1
        running.close()
        wait_for(lambda: health(service)[1]["episodes_running"] == 0, timeout=10)
        streamed = open_request(service, {**BODY, "stream": True})
        reply = streamed.getresponse()
        assert reply.status == 200 and reply.readline().startswith(b"data: ")
        assert health(service)[1]["episodes_running"] == 1
        streamed.close()  # the stream's client leaves: its episode stops
        wait_for(lambda: health(service)[1]["episodes_running"] == 0, timeout=10)
    finally:
        post(url, "/continue_generation")
    outcomes = [
        line.split(": ", 1)[1].split(";")[0] for line in service.request_lines()[-3:]
    ]
    assert outcomes == ["499 client disconnected"] * 3

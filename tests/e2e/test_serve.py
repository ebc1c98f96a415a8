"""examples/serve.py as a caller sees it: OpenAI's ``openai`` client against
``python -m standin.serve`` (the product's entry with the stand-in's classes)
in front of a running stand-in named by address (``standin.server_addr``), on
the warm-started needle model. One service and one stand-in for the file.

A stream parsed by the client, one event per chunk; the engine paused so that
episodes stay in flight: the cap, the queue and its 429, a disconnect freeing
its place; the engine killed mid-request (503 in words, /health 503 with the
cause, the next request refused at once) and, once it is back on its address,
used again; every limit, a bad body, a
missing or wrong key, and a non-loopback address without a key refused. The
trained checkpoint's answers (docs/serve.md's commands as written, ``ask.py``'s
answer, 32 concurrent documents): tests/e2e/test_learning.py.
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pytest

from tests.e2e.ask_command import REPO
from tests.e2e.serve_command import Service

KEY = "test-key-7"
NEEDLE = (REPO / "docs" / "needle_64.txt").read_text()
QUESTION = "what is the code of eve ?"
SERVER_ARGS = ["--context-length", "64", "--skip-tokenizer-init", "--seed", "1"]


def start_standin(model: Path, log: Path, port: int | None = None):
    from standin.launch import StandinServer

    return StandinServer(model, port=port, log_file=log, extra_args=SERVER_ARGS).start()


@pytest.fixture(scope="module")
def stack(needle_model_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("serve")
    servers = [start_standin(needle_model_dir, root / "standin.log")]
    cmd = (
        f"{sys.executable} -m standin.serve --config config_eval_needle.yaml"
        f" actor.path={needle_model_dir} ++standin.server_addr={servers[0].addr}"
        f" eval.output_dir={root / 'out'} cluster.fileroot={root / 'areal'}"
        f" cluster.name_resolve.nfs_record_root={root / 'nr'}"
        " memagent.engine_retry_s=1 serve.max_episodes=2 serve.max_queue=1"
        " serve.max_document_tokens=2000 serve.max_chunks=300 --port 0"
    )
    try:
        service = Service(cmd, root / "serve.log", {"MEMAGENT_API_KEY": KEY})
        try:
            yield service, servers, needle_model_dir, root
        finally:
            code = service.stop()
        # SIGTERM: the service stops its engine and exits 0
        assert code == 0 and "MemAgent service stopped" in service.text(), code
    finally:
        for server in servers:
            server.stop()


def client(service: Service, key: str = KEY) -> openai.OpenAI:
    # max_retries=0: the client would retry a 429 or a 5xx by itself
    return openai.OpenAI(base_url=f"{service.base_url}/v1", api_key=key, max_retries=0)


def ask(service: Service, document: str = NEEDLE, question: str = QUESTION, **kw):
    messages = [
        {"role": "user", "content": document},
        {"role": "user", "content": question},
    ]
    return client(service).chat.completions.create(
        model="memagent", messages=messages, temperature=0, **kw
    )


def post(server, path: str, body: dict) -> dict:
    req = urllib.request.Request(
        f"{server.url}{path}",
        json.dumps(body).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def running_and_queued(service: Service) -> tuple[int, int]:
    health = service.health()
    return health["episodes_running"], health["requests_queued"]


def wait_for(what, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while not (got := what()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)
    return got


class InThread(threading.Thread):
    """A call in a thread: its result or its exception, once joined."""

    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn, self.result, self.error = fn, None, None
        self.start()

    def run(self):
        try:
            self.result = self.fn()
        except Exception as exc:  # kept for the test to look at
            self.error = exc

    def get(self, timeout: float = 120):
        self.join(timeout)
        assert not self.is_alive(), "the call did not return"
        if self.error is not None:
            raise self.error
        return self.result


def test_a_stream_has_one_event_per_chunk_and_the_answer_of_the_plain_call(stack):
    service = stack[0]
    plain = ask(service)
    stream = ask(service, stream=True, stream_options={"include_usage": True})
    events = list(stream)
    turns = [
        e.model_extra["memagent"]
        for e in events
        if "turn" in (e.model_extra.get("memagent") or {})
    ]
    assert [t["turn"] for t in turns] == list(range(64))
    assert all(t["chunks"] == 64 for t in turns)
    content = "".join(e.choices[0].delta.content or "" for e in events if e.choices)
    final = [e for e in events if e.choices and e.choices[0].finish_reason]
    # greedy: the stream and the plain call read the same chunks alike
    assert content == plain.choices[0].message.content
    ext = plain.model_extra["memagent"]
    assert final[-1].model_extra["memagent"]["final_memory"] == ext["final_memory"]
    assert (ext["chunks"], ext["turns"]) == (64, 65)
    assert events[-1].usage.total_tokens == plain.usage.total_tokens > 0
    lines = service.request_lines()
    assert lines[-2].split(": ", 1)[1].startswith("200 answered;")
    assert "200 answered (streamed); 384 document tokens, 64 chunks" in lines[-1]


def test_the_cap_the_queue_and_a_disconnect_that_frees_its_place(stack):
    service, servers = stack[0], stack[1]
    post(servers[-1], "/pause_generation", {"mode": "in_place"})  # turns wait
    try:
        host, port = service.base_url.removeprefix("http://").rsplit(":", 1)
        gone = http.client.HTTPConnection(host, int(port), timeout=30)
        body = {
            "model": "memagent",
            "messages": [
                {"role": "user", "content": NEEDLE},
                {"role": "user", "content": QUESTION},
            ],
        }
        gone.request("POST", "/v1/chat/completions", json.dumps(body),
                     {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})  # fmt: skip
        wait_for(lambda: service.health()["episodes_running"] == 1)
        second = InThread(lambda: ask(service))
        wait_for(lambda: service.health()["episodes_running"] == 2)
        queued = InThread(lambda: ask(service))
        wait_for(lambda: service.health()["requests_queued"] == 1)
        with pytest.raises(openai.RateLimitError) as busy:
            ask(service)
        assert int(busy.value.response.headers["Retry-After"]) >= 1
        assert "serve.max_queue=1" in busy.value.message
        gone.close()  # the first client leaves: the queued request takes its place
        wait_for(lambda: running_and_queued(service) == (2, 0))
    finally:
        post(servers[-1], "/continue_generation", {})
    for call in (second, queued):
        assert call.get().model_extra["memagent"]["chunks"] == 64
    wait_for(lambda: service.health()["episodes_running"] == 0)
    outcomes = [
        line.split(": ", 1)[1].split(";")[0] for line in service.request_lines()[-4:]
    ]
    assert sorted(outcomes) == sorted(
        [
            "429 rate_limit_exceeded",
            "499 client disconnected",
            "200 answered",
            "200 answered",
        ]
    )


def test_a_killed_engine_is_503_and_once_back_the_next_request_is_answered(stack):
    service, servers, model, root = stack
    server = servers[-1]
    post(server, "/pause_generation", {"mode": "in_place"})  # the call stays in flight
    call = InThread(lambda: ask(service))
    wait_for(lambda: service.health()["episodes_running"] == 1)
    server.proc.kill()  # the engine disappears mid-request
    with pytest.raises(openai.InternalServerError) as failed:
        call.get()
    assert failed.value.status_code == 503
    error = failed.value.body
    # in words, naming the server; the service stays up and says why on /health
    assert error["code"] == "engine_unavailable"
    assert error["message"].startswith(f"the model server at {server.addr} ")
    down = health_status(service)
    assert down[0] == 503 and server.addr in down[1]["cause"]
    with pytest.raises(openai.InternalServerError):  # known down: refused at once
        ask(service)
    server.stop()
    servers.append(start_standin(model, root / "standin2.log", port=server.port))
    # named by address, never restarted by the service: used again once it answers
    wait_for(lambda: health_status(service)[0] == 200)
    answer = ask(service)  # the same address, a new engine
    assert answer.model_extra["memagent"]["chunks"] == 64
    outcomes = [line.split(": ", 1)[1] for line in service.request_lines()[-3:]]
    assert outcomes[0].startswith("503 engine_unavailable; 384 document tokens")
    assert outcomes[1].startswith("503 engine_unavailable; - document tokens")


def health_status(service: Service) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"{service.base_url}/health", timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_concurrent_answers_equal_the_same_requests_run_alone(stack):
    """Distinct documents, two in flight at once and one queued (turns
    interleaved and batched on the engine), at temperature 0: each reply is
    exactly the reply the same request gets alone."""
    from memagent_workflow.data.synthetic import make_needle

    service = stack[0]
    rows = make_needle(6, seed=77, chunks=12, distractors=1.0, split="valid")

    def run(row):
        reply = ask(service, row["context"], row["question"])
        ext = reply.model_extra["memagent"]
        return reply.choices[0].message.content, ext["final_memory"], ext["chunks"]

    with ThreadPoolExecutor(3) as pool:  # serve.max_episodes=2, serve.max_queue=1
        together = list(pool.map(run, rows))
    alone = [run(row) for row in rows]
    assert together == alone
    assert len({memory for _, memory, _ in alone}) > 1  # the documents differ


def refusal(service, body: bytes, headers: dict) -> tuple[int, dict]:
    req = urllib.request.Request(
        f"{service.base_url}/v1/chat/completions", body, headers
    )
    try:
        urllib.request.urlopen(req, timeout=30)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())["error"]
    raise AssertionError("not refused")


def test_limits_bad_bodies_and_keys_are_refused_in_openais_error_body(stack):
    service = stack[0]
    with pytest.raises(openai.AuthenticationError):
        client(service, "wrong").models.list()
    assert [m.id for m in client(service).models.list()] == ["memagent"]
    json_headers = {"Content-Type": "application/json"}
    good = json.dumps({"model": "memagent", "messages": [
        {"role": "user", "content": "code of eve is red ."}, {"role": "user", "content": QUESTION}]}).encode()  # fmt: skip
    auth = {**json_headers, "Authorization": f"Bearer {KEY}"}
    cases = [
        (good, json_headers, 401, "invalid_api_key", "API key"),
        (
            good,
            {**json_headers, "Authorization": "Bearer nope"},
            401,
            "invalid_api_key",
            "Incorrect",
        ),
        (b"{oops", auth, 400, "invalid_json", "not JSON"),
        (b'{"model": "memagent"}', auth, 400, "invalid_value", "messages"),
    ]
    for body, headers, status, code, says in cases:
        got, error = refusal(service, body, headers)
        assert (got, error["code"]) == (status, code) and says in error["message"], (
            error
        )
    big = " ".join([NEEDLE.replace("\n", " ")] * 6)  # 2304 tokens
    long_ = " ".join([NEEDLE.replace("\n", " ")] * 5)  # 320 chunks
    for document, question, status, names in (
        (big, QUESTION, 413, "serve.max_document_tokens=2000"),
        (long_, QUESTION, 413, "serve.max_chunks=300"),
        (NEEDLE, "what is the code of " + "eve " * 40 + "?", 400, "gconfig.max_tokens"),
    ):
        with pytest.raises(openai.APIStatusError) as err:
            ask(service, document, question)
        assert err.value.status_code == status and names in err.value.message
    with pytest.raises(openai.NotFoundError):
        client(service).chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "q"}]
        )
    with pytest.raises(openai.BadRequestError) as refused:
        ask(service, tools=[{"type": "function", "function": {"name": "f"}}])
    assert refused.value.body["param"] == "tools"
    with pytest.raises(openai.NotFoundError):
        client(service).completions.create(model="memagent", prompt="q")
    assert service.health()["episodes_running"] == 0
    codes = [
        line.split(": ", 1)[1].split(";")[0] for line in service.request_lines()[-9:]
    ]
    assert codes == [
        "401 invalid_api_key", "401 invalid_api_key", "400 invalid_json",
        "400 invalid_value", "413 document_too_large", "413 too_many_chunks",
        "400 question_too_long", "404 model_not_found", "400 unsupported_parameter",
    ]  # fmt: skip


def test_a_non_loopback_address_without_a_key_is_refused(
    needle_model_dir, monkeypatch, capfd
):
    from standin import serve

    monkeypatch.delenv("MEMAGENT_API_KEY", raising=False)
    monkeypatch.chdir(REPO)
    argv = ["--config", "config_eval_needle.yaml", f"actor.path={needle_model_dir}"]
    with pytest.raises(SystemExit) as stop:
        serve.main([*argv, "--host", "0.0.0.0"])
    assert stop.value.code == 2
    out = capfd.readouterr()
    assert "serve.host=0.0.0.0 is not a loopback address" in out.out + out.err
    assert "MEMAGENT_API_KEY" in out.out + out.err


def test_the_config_a_launched_worker_rebuilds_is_whole(needle_model_dir):
    # scheduler.type=local sends the config to AReaL's rollout worker, which
    # rebuilds it by its class's import path: a class defined in the entry
    # (``python -m standin.serve``, module __main__) came back a dict there
    # ("'dict' object has no attribute 'seed'")
    from areal.infra.rpc.serialization import deserialize_value, serialize_value

    from memagent_workflow.infra.paths import load_entry_config
    from standin.config import StandinServeConfig

    assert StandinServeConfig.__module__ == "standin.config"  # not the entry's
    argv = ["--config", str(REPO / "config_eval_needle.yaml"), f"actor.path={needle_model_dir}",
            "scheduler.type=local", "++serve.max_episodes=3"]  # fmt: skip
    config = load_entry_config(argv, StandinServeConfig, "examples/serve.py")
    rebuilt = deserialize_value(serialize_value(config))
    assert isinstance(rebuilt, StandinServeConfig)
    assert rebuilt.serve.max_episodes == 3 and rebuilt.eval.tasks

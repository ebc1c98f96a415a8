"""The service's routes under faults, in this process: a model call that hangs
(504 within ``serve.call_timeout_s``), a request past ``serve.request_timeout_s``,
the engine known down (``/health`` 503 with the cause, new requests 503 at once,
calls in flight given up), bounded restarts, a cause that does not outlive a
retry that succeeded, a queued client that leaves, the queue closed on shutdown
and its byte budget, a question refused by length before it is tokenized, and
an unexpected error inside a stream. The running service: tests/e2e/test_serve_recovery.py
and tests/e2e/test_serve_shutdown.py.
"""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from memagent_workflow.serve.admission import Admission
from memagent_workflow.serve.app import Service
from memagent_workflow.serve.config import ServeConfig
from memagent_workflow.serve.engine import TurnCounter
from memagent_workflow.serve.episode import EpisodeRunner
from memagent_workflow.serve.health import EngineHealth
from memagent_workflow.serve.limits import Limits
from tests.fakes import FakeEngine, ask_workflow

KEY = "s3cret"
AUTH = {"Authorization": f"Bearer {KEY}"}
DOC = " ".join(f"Item {i} is stored in box {i * 7 % 13}." for i in range(20))
BODY = {
    "model": "memagent",
    "messages": [
        {"role": "user", "content": DOC},
        {"role": "user", "content": "Where is item 3?"},
    ],
}


@pytest.fixture(scope="module")
def workflow(tiny_model_dir):
    return ask_workflow(tiny_model_dir)


class Gated(FakeEngine):
    """A FakeEngine whose calls wait for ``gate`` (never set: a hung server)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.gate = asyncio.Event()

    async def agenerate(self, req):
        await self.gate.wait()
        return await super().agenerate(req)


def service(workflow, engine, health=None, **cfg) -> Service:
    cfg = ServeConfig(**{"max_document_tokens": 2000, "max_chunks": 50, **cfg})
    return Service(
        EpisodeRunner(workflow, engine, cfg.call_timeout_s, health),
        Limits(cfg, workflow),
        Admission(cfg.max_episodes, cfg.max_queue, cfg.max_queue_bytes),
        "memagent",
        KEY,
        health,
    )


def http(svc: Service) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=svc.app())
    return httpx.AsyncClient(transport=transport, base_url="http://t", headers=AUTH)


def down_after(failures: int, restart=None, max_restarts: int = 0):
    """An `EngineHealth` whose probe fails while ``state["down"]``."""
    state = {"down": False}

    async def probe(addr: str) -> str | None:
        return (
            f"the model server at {addr} refused the connection"
            if state["down"]
            else None
        )

    health = EngineHealth(lambda: ["h:1"], probe, 0.01, failures, restart, max_restarts)
    return health, state


async def test_a_hung_call_is_504_within_serve_call_timeout_s(workflow):
    engine = Gated(workflow.tokenizer, lambda ep: "\\boxed{x}")
    async with http(service(workflow, engine, call_timeout_s=0.3)) as c:
        start = time.monotonic()
        reply = await c.post("/v1/chat/completions", json=BODY)
    assert time.monotonic() - start < 5
    assert reply.status_code == 504, reply.text
    error = reply.json()["error"]
    assert error["code"] == "engine_timeout" and error["type"] == "server_error"
    assert "did not answer within 0.3 s (serve.call_timeout_s)" in error["message"]


async def test_a_request_past_serve_request_timeout_s_is_504(workflow):
    class Slow(FakeEngine):
        async def agenerate(self, req):
            await asyncio.sleep(0.05)
            return await super().agenerate(req)

    engine = Slow(workflow.tokenizer, lambda ep: "\\boxed{x}")
    async with http(service(workflow, engine, request_timeout_s=0.2)) as c:
        reply = await c.post("/v1/chat/completions", json=BODY)
    assert reply.status_code == 504
    assert reply.json()["error"]["code"] == "request_timeout"
    assert "serve.request_timeout_s" in reply.json()["error"]["message"]


async def test_an_engine_known_down_is_503_at_once_and_on_health_until_it_is_back(
    workflow,
):
    engine = FakeEngine(workflow.tokenizer, lambda ep: "\\boxed{ok}")
    health, state = down_after(2)
    async with http(service(workflow, engine, health)) as c:
        state["down"] = True
        await health.probe_once()  # one failure: not yet down
        assert (await c.get("/health")).status_code == 200
        await health.probe_once()
        reply = await c.get("/health")
        assert reply.status_code == 503
        assert reply.json()["status"] == "engine_down"
        assert reply.json()["cause"] == "the model server at h:1 refused the connection"
        refused = await c.post("/v1/chat/completions", json=BODY)
        assert refused.status_code == 503 and engine.calls == []  # at once
        assert refused.json()["error"]["code"] == "engine_unavailable"
        assert "h:1 refused the connection" in refused.json()["error"]["message"]
        state["down"] = False  # back at its address: used again
        await health.probe_once()
        assert (await c.get("/health")).json()["status"] == "ok"
        reply = await c.post("/v1/chat/completions", json=BODY)
        assert (
            reply.status_code == 200 and reply.json()["memagent"]["extracted"] == "ok"
        )


async def test_a_call_in_flight_ends_when_the_engine_is_found_down(workflow):
    engine = Gated(workflow.tokenizer, lambda ep: "\\boxed{x}")
    health, state = down_after(1)
    async with http(service(workflow, engine, health)) as c:
        call = asyncio.create_task(c.post("/v1/chat/completions", json=BODY))
        await asyncio.sleep(0.2)
        assert not call.done()
        state["down"] = True
        await health.probe_once()
        reply = await asyncio.wait_for(call, 5)
    assert reply.status_code == 503
    assert reply.json()["error"]["message"] == (
        "the model server at h:1 refused the connection"
    )


async def test_a_launched_engine_is_restarted_at_most_serve_max_restarts_times():
    restarts = []

    async def restart():
        restarts.append(len(restarts))

    health, state = down_after(2, restart, max_restarts=2)
    state["down"] = True
    for _ in range(10):
        await health.probe_once()
    assert restarts == [0, 1]  # one per down, and no more than the bound
    assert health.report() == {
        "engine": "down",
        "cause": "the model server at h:1 refused the connection",
        "failed_probes": 6,  # in a row since the last restart (probes 5 to 10)
        "engine_restarts": 2,
    }
    state["down"] = False
    await health.probe_once()
    assert health.up and health.report()["engine_restarts"] == 2


async def test_a_retry_that_succeeded_leaves_no_cause(workflow):
    engine = FakeEngine(workflow.tokenizer, lambda ep: "x", failures=1)
    counter = TurnCounter(engine)
    req = type(
        "Req", (), {"rid": "r", "input_ids": [1, 2], "gconfig": None, "metadata": {}}
    )
    with pytest.raises(RuntimeError):
        await counter.agenerate(req)
    assert counter.error is not None
    req.gconfig = workflow.final_gconfig
    await counter.agenerate(req)
    assert counter.error is None  # a later fault is not reported with this cause


async def asgi_post(app, body: bytes, gone: asyncio.Event) -> list[dict]:
    """A POST whose client disconnects once ``gone`` is set; what was sent back."""
    sent, incoming = [], [{"type": "http.request", "body": body, "more_body": False}]

    async def receive():
        if incoming:
            return incoming.pop()
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    headers = [(b"content-type", b"application/json"), (b"authorization", f"Bearer {KEY}".encode())]  # fmt: skip
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "path": "/v1/chat/completions", "raw_path": b"",
             "query_string": b"", "headers": headers, "client": ("127.0.0.1", 1),
             "server": ("127.0.0.1", 80), "scheme": "http", "root_path": ""}  # fmt: skip
    await app(scope, receive, send)
    return sent


async def test_a_queued_request_whose_client_leaves_leaves_the_queue_at_once(workflow):
    engine = Gated(workflow.tokenizer, lambda ep: "\\boxed{x}")
    svc = service(workflow, engine, max_episodes=1, max_queue=2)
    app, body = svc.app(), json.dumps(BODY).encode()
    stay, leave = asyncio.Event(), asyncio.Event()
    running = asyncio.create_task(asgi_post(app, body, stay))
    await asyncio.sleep(0.2)
    queued = asyncio.create_task(asgi_post(app, body, leave))
    await asyncio.sleep(0.2)
    assert (svc.admission.running, svc.admission.queued) == (1, 1)
    leave.set()  # the queued client disconnects
    sent = await asyncio.wait_for(queued, 2)
    assert svc.admission.queued == 0 and svc.admission.queued_bytes == 0
    assert sent[0]["status"] == 499
    engine.gate.set()
    assert (await asyncio.wait_for(running, 10))[0]["status"] == 200


async def test_the_queue_closed_on_shutdown_answers_503_and_holds_a_byte_budget():
    adm = Admission(max_running=1, max_queued=5, max_queued_bytes=100)
    release = asyncio.Event()

    async def hold():
        async with adm.slot(10):
            await release.wait()

    async def wait(n_bytes: int):
        async with adm.slot(n_bytes):
            pass

    first = asyncio.create_task(hold())
    await asyncio.sleep(0)
    queued = asyncio.create_task(wait(60))
    await asyncio.sleep(0.05)
    with pytest.raises(Exception) as over:
        await wait(50)  # 60 + 50 > 100 bytes queued
    assert (
        over.value.status == 429 and "serve.max_queue_bytes=100" in over.value.message
    )
    adm.close()
    with pytest.raises(Exception) as stopping:
        await asyncio.wait_for(queued, 2)
    assert (stopping.value.status, stopping.value.code) == (503, "shutting_down")
    assert adm.queued == 0 and adm.queued_bytes == 0
    release.set()
    await first


async def test_a_question_is_refused_by_length_before_it_is_tokenized(
    workflow, monkeypatch
):
    engine = FakeEngine(workflow.tokenizer, lambda ep: "x")
    svc = service(workflow, engine, max_question_tokens=8)
    monkeypatch.setattr(svc.limits, "question", lambda *a: pytest.fail("tokenized"))
    body = {
        **BODY,
        "messages": [BODY["messages"][0], {"role": "user", "content": "why " * 100}],
    }
    async with http(svc) as c:
        reply = await c.post("/v1/chat/completions", json=body)
    assert reply.status_code == 400
    assert (
        "400 characters, more than 16 per token of serve.max_question_tokens=8"
        in (reply.json()["error"]["message"])
    )


async def test_an_unexpected_error_in_a_stream_is_an_error_event_and_a_500(workflow):
    class Broken(EpisodeRunner):
        async def run(self, *args, **kw):
            raise KeyError("a bug")

    engine = FakeEngine(workflow.tokenizer, lambda ep: "x")
    svc = service(workflow, engine)
    svc.runner = Broken(workflow, engine)
    async with http(svc) as c:
        reply = await c.post("/v1/chat/completions", json={**BODY, "stream": True})
    lines = [line for line in reply.text.splitlines() if line]
    assert reply.status_code == 200 and len(lines) == 2
    error = json.loads(lines[-1].removeprefix("data: "))["error"]
    assert error["code"] == "internal" and "a bug" not in error["message"]
    assert svc.admission.running == 0

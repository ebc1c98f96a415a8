"""The service's routes in this process over a fake engine (tests/fakes.py):
what a reply holds (the answer, every turn's tokens in ``usage``, the final
memory and trace), the stream's events, each limit and a bad key refused in
OpenAI's error body naming it, and an engine failure answered 502/503 while
``/health`` keeps answering. The real service, its engine and its client:
tests/e2e/test_serve.py."""

from __future__ import annotations

import io
import json

import pytest
from fastapi.testclient import TestClient

from memagent_workflow.eval.ask import encode_stream
from memagent_workflow.serve.admission import Admission
from memagent_workflow.serve.app import Service
from memagent_workflow.serve.config import ServeConfig
from memagent_workflow.serve.episode import EpisodeRunner
from memagent_workflow.serve.limits import Limits
from tests.fakes import FakeEngine, ask_workflow

KEY = "s3cret"
AUTH = {"Authorization": f"Bearer {KEY}"}
CHUNK = 40
DOC = " ".join(f"Item {i} is stored in box {i * 7 % 13}." for i in range(40))


@pytest.fixture(scope="module")
def workflow(tiny_model_dir):
    return ask_workflow(tiny_model_dir, CHUNK)


def client(workflow, engine, **limits) -> TestClient:
    cfg = ServeConfig(**{"max_document_tokens": 2000, "max_chunks": 50, **limits})
    service = Service(
        EpisodeRunner(workflow, engine),
        Limits(cfg, workflow),
        Admission(cfg.max_episodes, cfg.max_queue),
        "memagent",
        KEY,
    )
    return TestClient(service.app())


def body(document: str = DOC, question: str = "Where is item 3?", **extra):
    return {
        "model": "memagent",
        "messages": [
            {"role": "user", "content": document},
            {"role": "user", "content": question},
        ],
        **extra,
    }


def test_a_reply_is_the_episodes_answer_with_every_turns_tokens(workflow):
    engine = FakeEngine(workflow.tokenizer, lambda ep: f"\\boxed{{box {ep}}}")
    reply = client(workflow, engine).post(
        "/v1/chat/completions", json=body(memagent={"trace": True}), headers=AUTH
    )
    assert reply.status_code == 200, reply.text
    out = reply.json()
    n_tokens = len(encode_stream(workflow.tokenizer, io.StringIO(DOC), "doc"))
    chunks = -(-n_tokens // CHUNK)
    assert len(engine.calls) == chunks + 1  # a memory turn per chunk, the answer
    assert out["object"] == "chat.completion"
    assert out["choices"][0]["message"] == {
        "role": "assistant",
        "content": "\\boxed{box 0}",
    }
    assert out["choices"][0]["finish_reason"] == "stop"
    prompt = sum(len(c.input_ids) for c in engine.calls)
    completion = sum(len(c.output_ids) for c in engine.calls)
    assert out["usage"] == {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    ext = out["memagent"]
    assert (ext["chunks"], ext["document_tokens"], ext["turns"]) == (
        chunks,
        n_tokens,
        chunks + 1,
    )
    assert ext["extracted"] == "box 0"
    # the memory the final turn read: what the last memory turn wrote
    last = engine.calls[-2].output_ids[:-1]  # less its EOS
    assert ext["final_memory"] == workflow.tokenizer.decode(
        last, skip_special_tokens=True
    )
    assert len(ext["trace"]["turns"]) == chunks and ext["trace"]["n_chunks"] == chunks


def test_without_trace_the_reply_has_no_trace(workflow):
    engine = FakeEngine(workflow.tokenizer, lambda ep: "\\boxed{x}")
    out = client(workflow, engine).post(
        "/v1/chat/completions", json=body(), headers=AUTH
    )
    assert "trace" not in out.json()["memagent"]


def test_a_stream_has_an_event_per_chunk_then_the_answer_and_done(workflow):
    engine = FakeEngine(workflow.tokenizer, lambda ep: "\\boxed{ red }")
    req = body(stream=True, stream_options={"include_usage": True})
    with client(workflow, engine).stream(
        "POST", "/v1/chat/completions", json=req, headers=AUTH
    ) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in reply.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"
    events = [json.loads(line[6:]) for line in lines[:-1]]
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    turns = [e["memagent"] for e in events if "turn" in e.get("memagent", {})]
    chunks = len(engine.calls) - 1
    assert [t["turn"] for t in turns] == list(range(chunks))
    assert all(t["chunks"] == chunks and t["memory_tokens"] > 0 for t in turns)
    content = "".join(
        e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"]
    )
    assert content == "\\boxed{ red }"
    final = [e for e in events if e["choices"] and e["choices"][0]["finish_reason"]]
    assert len(final) == 1 and final[0]["memagent"]["chunks"] == chunks
    assert events[-1]["choices"] == [] and events[-1]["usage"]["total_tokens"] > 0
    assert all(e["object"] == "chat.completion.chunk" for e in events)


@pytest.mark.parametrize(
    "limits, request_, status, code, names",
    [
        (
            {"max_body_bytes": 500},
            body(),
            413,
            "request_too_large",
            "serve.max_body_bytes",
        ),
        (
            {"max_document_tokens": 50},
            body(),
            413,
            "document_too_large",
            "serve.max_document_tokens=50",
        ),
        ({"max_chunks": 3}, body(), 413, "too_many_chunks", "serve.max_chunks=3"),
        (
            {"max_question_tokens": 4},
            body(question="Where " * 10),
            400,
            "question_too_long",
            "serve.max_question_tokens=4",
        ),
        (
            {"max_question_tokens": 10**6},
            body(question="item " * 3000),
            400,
            "question_too_long",
            "gconfig.max_tokens",
        ),
        ({}, body(document=" \n "), 400, "missing_document", "no document"),
    ],
)
def test_each_limit_is_refused_naming_it(
    workflow, limits, request_, status, code, names
):
    engine = FakeEngine(workflow.tokenizer, lambda ep: "x")
    reply = client(workflow, engine, **limits).post(
        "/v1/chat/completions", json=request_, headers=AUTH
    )
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert error["code"] == code and names in error["message"], error
    assert engine.calls == []  # refused before any model call


def test_a_body_that_is_not_json_is_400(workflow):
    engine = FakeEngine(workflow.tokenizer, lambda ep: "x")
    reply = client(workflow, engine).post(
        "/v1/chat/completions", content=b"{not json", headers=AUTH
    )
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "invalid_json"


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer nope"}])
def test_a_missing_or_wrong_key_is_401_and_health_needs_none(workflow, headers):
    engine = FakeEngine(workflow.tokenizer, lambda ep: "x")
    app = client(workflow, engine)
    for reply in (
        app.post("/v1/chat/completions", json=body(), headers=headers),
        app.get("/v1/models", headers=headers),
    ):
        assert reply.status_code == 401
        assert reply.json()["error"]["code"] == "invalid_api_key"
    assert engine.calls == []
    assert app.get("/health").json()["status"] == "ok"
    models = app.get("/v1/models", headers=AUTH).json()
    assert [m["id"] for m in models["data"]] == ["memagent"]


@pytest.mark.parametrize(
    "last_error, status, code, words",
    [
        (
            "ClientConnectorError(ConnectionRefusedError(111))",
            503,
            "engine_unavailable",
            "the model server at 127.0.0.1:9 refused the connection",
        ),
        (
            "ClientResponseError(status=500)",
            502,
            "engine_error",
            "the model server at 127.0.0.1:9 answered HTTP 500",
        ),
    ],
)
def test_an_engine_failure_is_5xx_and_the_service_stays_up(
    workflow, last_error, status, code, words
):
    class Failing(FakeEngine):
        async def agenerate(self, req):
            if self.broken:
                raise RuntimeError(
                    "Failed after 3 retries each. Payload: {...}. Addr: 127.0.0.1:9. "
                    f"Endpoint: /generate. Last error: {last_error}"
                )
            return await super().agenerate(req)

    engine = Failing(workflow.tokenizer, lambda ep: "\\boxed{ok}")
    engine.broken = True
    app = client(workflow, engine)
    reply = app.post("/v1/chat/completions", json=body(), headers=AUTH)
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert error["code"] == code and error["type"] == "server_error"
    # in words; the exception's repr goes to the log only
    assert error["message"] == words and "Error(" not in error["message"]
    assert app.get("/health").json() == {
        "status": "ok",
        "model": "memagent",
        "episodes_running": 0,
        "requests_queued": 0,
    }
    engine.broken = False  # the engine is back: the next request is answered
    reply = app.post("/v1/chat/completions", json=body(), headers=AUTH)
    assert reply.status_code == 200 and reply.json()["memagent"]["extracted"] == "ok"


def test_launched_servers_get_a_client_in_this_process(monkeypatch):
    # scheduler.type=local: AReaL's controller launched the servers (its
    # workers would run whole episodes); the service runs its own episodes
    # through a client of the same engine class connected to those servers
    import contextlib
    from types import SimpleNamespace

    from memagent_workflow.serve import engine as serve_engine_module

    made = []

    class Client:
        def __init__(self, rollout):
            self.rollout, self.destroyed = rollout, False
            made.append(self)

        def initialize(self, addr, train_data_parallel_size):
            self.addr = addr

        def destroy(self):
            self.destroyed = True

    infos = [
        SimpleNamespace(host="10.0.0.5", port=30001),
        SimpleNamespace(host="10.0.0.6", port=30002),
    ]
    controller = SimpleNamespace(server_infos=infos)
    monkeypatch.setattr(
        serve_engine_module,
        "open_engine",
        lambda c, i: contextlib.nullcontext(controller),
    )
    config = SimpleNamespace(rollout="rollout-config")
    inference = SimpleNamespace(engine_class=lambda: Client)
    with serve_engine_module.serve_engine(config, inference) as engine:
        assert engine is made[0] and engine.addr == ["10.0.0.5:30001", "10.0.0.6:30002"]
        assert engine.rollout == "rollout-config" and not engine.destroyed
    assert made[0].destroyed
    running = SimpleNamespace(agenerate=None)  # running servers: the engine as is
    monkeypatch.setattr(
        serve_engine_module, "open_engine", lambda c, i: contextlib.nullcontext(running)
    )
    with serve_engine_module.serve_engine(config, inference) as engine:
        assert engine is running

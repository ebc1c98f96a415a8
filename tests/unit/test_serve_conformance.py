"""The service as OpenAI's clients expect it, in this process: the parameters
MemAgent cannot honour refused naming them, ``n: null`` accepted,
``max_tokens`` as the final answer's budget, one ``created`` per stream, the
streaming headers, OpenAI-shaped 404/405 bodies, ``/openapi.json`` only when
asked for, the API key from a file or the environment; and requests that never
cross: concurrent requests over distinct documents, each answered from its own,
against an engine whose answers follow what each prompt holds.
"""

from __future__ import annotations

import asyncio
import json
import random
import re

import httpx
import pytest
from areal.api.io_struct import ModelResponse

from memagent_workflow.serve import auth
from memagent_workflow.serve.admission import Admission
from memagent_workflow.serve.app import Service
from memagent_workflow.serve.config import ServeConfig
from memagent_workflow.serve.episode import EpisodeRunner
from memagent_workflow.serve.limits import Limits
from tests.fakes import FakeEngine, ask_workflow

DOC = " ".join(f"Item {i} is stored in box {i * 7 % 13}." for i in range(20))
MESSAGES = [
    {"role": "user", "content": DOC},
    {"role": "user", "content": "Where is item 3?"},
]
BODY = {"model": "memagent", "messages": MESSAGES}


@pytest.fixture(scope="module")
def workflow(tiny_model_dir):
    return ask_workflow(tiny_model_dir)


def http(workflow, engine, **cfg) -> httpx.AsyncClient:
    cfg = ServeConfig(**{"max_document_tokens": 4000, "max_chunks": 100, **cfg})
    service = Service(
        EpisodeRunner(workflow, engine),
        Limits(cfg, workflow),
        Admission(cfg.max_episodes, cfg.max_queue),
        "memagent",
        None,
    )
    transport = httpx.ASGITransport(app=service.app())
    return httpx.AsyncClient(transport=transport, base_url="http://t")


@pytest.mark.parametrize(
    "extra, param",
    [
        ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools"),
        ({"tool_choice": "auto"}, "tool_choice"),
        ({"response_format": {"type": "json_object"}}, "response_format"),
        ({"logprobs": True}, "logprobs"),
        ({"n": 2}, "n"),
        ({"stop": ["\n"]}, "stop"),
        ({"seed": 0}, "seed"),
        ({"max_tokens": 10_000}, "max_tokens"),
        ({"max_completion_tokens": 0}, "max_completion_tokens"),
    ],
)
async def test_what_memagent_cannot_honour_is_400_naming_the_parameter(
    workflow, extra, param
):
    engine = FakeEngine(workflow.tokenizer, lambda ep: "x")
    async with http(workflow, engine) as c:
        reply = await c.post("/v1/chat/completions", json={**BODY, **extra})
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["param"] == param and engine.calls == []


async def test_neutral_values_are_accepted_and_max_tokens_is_the_answers_budget(
    workflow,
):
    engine = FakeEngine(workflow.tokenizer, lambda ep: "\\boxed{x}")
    neutral = {"n": None, "tools": [], "tool_choice": "none", "logprobs": False,
               "response_format": {"type": "text"}, "stop": None, "max_tokens": 7}  # fmt: skip
    async with http(workflow, engine) as c:
        reply = await c.post("/v1/chat/completions", json={**BODY, **neutral})
    assert reply.status_code == 200, reply.text
    budgets = [call.max_new_tokens for call in engine.calls]
    assert budgets[-1] == 7  # the final answer's budget
    assert set(budgets[:-1]) == {workflow.memory_gconfig.max_new_tokens}


async def test_a_stream_has_one_created_and_no_cache_headers(workflow, monkeypatch):
    engine = FakeEngine(workflow.tokenizer, lambda ep: "\\boxed{ a b c }")
    clock = iter(range(1_000_000, 2_000_000, 7))  # every call a new second
    monkeypatch.setattr("time.time", lambda: next(clock))
    async with http(workflow, engine) as c:
        reply = await c.post("/v1/chat/completions", json={**BODY, "stream": True})
    assert reply.headers["cache-control"] == "no-cache"
    assert reply.headers["x-accel-buffering"] == "no"
    events = [json.loads(line[6:]) for line in reply.text.splitlines()
              if line.startswith("data: {")]  # fmt: skip
    assert len(events) > 3 and len({e["created"] for e in events}) == 1


async def test_unknown_routes_and_methods_answer_openais_error_body(workflow):
    engine = FakeEngine(workflow.tokenizer, lambda ep: "x")
    async with http(workflow, engine) as c:
        missing = await c.get("/v1/completions")
        wrong = await c.get("/v1/chat/completions")
        spec = await c.get("/openapi.json")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert wrong.status_code == 405
    assert wrong.json()["error"]["code"] == "method_not_allowed"
    assert spec.status_code == 404  # off unless serve.openapi
    async with http(workflow, engine, openapi=True) as c:
        assert (await c.get("/openapi.json")).status_code == 200


def test_the_key_comes_from_a_file_or_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv(auth.KEY_FILE_ENV, raising=False)
    monkeypatch.setenv(auth.KEY_ENV, "from-env")
    assert auth.api_key(None) == "from-env"
    key_file = tmp_path / "key"
    key_file.write_text("from-file\n")
    assert auth.api_key(str(key_file)) == "from-file"
    monkeypatch.setenv(auth.KEY_FILE_ENV, str(key_file))
    assert auth.api_key(None) == "from-file"
    key_file.write_text("\n")
    with pytest.raises(ValueError, match="is empty"):
        auth.api_key(None)
    with pytest.raises(ValueError, match="nope"):
        auth.api_key(str(tmp_path / "nope"))


class Reader:
    """A deterministic engine that reads: a memory turn writes the last code
    (``zqNNN``) its prompt holds, from its memory or its chunk; the final turn
    answers the code its memory holds. Calls finish in a random order."""

    def __init__(self, tokenizer, final_budget: int, seed: int = 0):
        self.tokenizer, self.final_budget = tokenizer, final_budget
        self.random = random.Random(seed)

    async def agenerate(self, req) -> ModelResponse:
        await asyncio.sleep(self.random.random() * 0.005)
        codes = re.findall(r"zq\d+", self.tokenizer.decode(req.input_ids))
        code = codes[-1] if codes else "none"
        final = req.gconfig.max_new_tokens == self.final_budget
        text = f"\\boxed{{{code}}}" if final else code
        out = self.tokenizer.encode(text, add_special_tokens=False)
        out.append(self.tokenizer.eos_token_id)
        return ModelResponse(input_tokens=list(req.input_ids), output_tokens=out,
                             output_logprobs=[0.0] * len(out),
                             output_versions=[0] * len(out), stop_reason="stop")  # fmt: skip


async def test_concurrent_requests_over_distinct_documents_never_cross(workflow):
    rng = random.Random(1)
    docs = {}
    for k in range(24):
        code = f"zq{100 + k * 37}"
        words = [f"Row {i} of file {k} holds nothing." for i in range(12 + k % 7)]
        words.insert(rng.randrange(len(words)), f"The code is {code}.")
        docs[code] = " ".join(words)
    engine = Reader(workflow.tokenizer, FakeEngine.final_budget)

    async def ask(client, code: str, stream: bool) -> str:
        messages = [{"role": "user", "content": docs[code]},
                    {"role": "user", "content": "What is the code?"}]  # fmt: skip
        body = {"model": "memagent", "messages": messages, "stream": stream}
        reply = await client.post("/v1/chat/completions", json=body)
        assert reply.status_code == 200, reply.text
        if not stream:
            return reply.json()["choices"][0]["message"]["content"]
        events = [json.loads(line[6:]) for line in reply.text.splitlines()
                  if line.startswith("data: {")]  # fmt: skip
        return "".join(e["choices"][0]["delta"].get("content") or "" for e in events)

    async with http(workflow, engine, max_episodes=16) as c:
        answers = await asyncio.gather(
            *(ask(c, code, i % 2 == 1) for i, code in enumerate(docs))
        )
    # each reply is exactly its own document's code (streamed or not)
    assert answers == [f"\\boxed{{{code}}}" for code in docs]

"""The stand-in in vLLM mode (``--protocol vllm``) against AReaL's own vLLM client.

Replies are parsed by AReaL 1.0.4's ``VLLMBackend`` and driven through its
``RemotevLLMEngine`` (generation with logprobs, stop token ids, a pause with a
request in flight, a disk weight update and its version), so a drift in the
stand-in's vLLM shapes fails here; each place where vLLM answers differently
from SGLang is pinned on the wire (``standin.vllm_protocol``).
"""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
import urllib.request

import pytest
import torch
from transformers import AutoModelForCausalLM

from standin.launch import StandinServer
from standin.model import weights_digest
from tests.http import call
from tests.integration.test_standin_generate import (
    parsed_stop_reasons,
    recompute,
    until,
)
from tests.integration.test_standin_server import PROMPT, wait_running

CONTEXT = 256  # --context-length (vLLM's max_model_len) of this file's server


@pytest.fixture(scope="module")
def ref_model(tiny_model_dir):
    return AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()


@pytest.fixture(scope="module")
def server(tiny_model_dir, tmp_path_factory):
    """A vLLM-mode stand-in of its own (a test here loads other weights)."""
    root = tmp_path_factory.mktemp("vllm")
    shutil.copytree(tiny_model_dir, root / "model")
    args = ["--protocol", "vllm", "--context-length", str(CONTEXT)]
    with StandinServer(
        root / "model", log_file=root / "server.log", extra_args=args
    ) as srv:
        yield srv


def body(prompt, max_tokens, **extra):
    """A completion request as AReaL's ``VLLMBackend.build_generation_request``
    builds it."""
    return {
        "top_p": 1.0, "top_k": 100000000, "max_tokens": max_tokens,
        "temperature": 1.0, "stop_token_ids": [], "ignore_eos": False,
        "skip_special_tokens": True, "return_tokens_as_token_ids": True,
        "logprobs": 0, "use_beam_search": False, "stream": False,
        "prompt": list(prompt), **extra,
    }  # fmt: skip


def complete(server, prompt, max_tokens, **extra):
    status, out = call(server, "/v1/completions", body(prompt, max_tokens, **extra))
    assert status == 200, out
    return out


def parsed(out):
    from areal.engine.vllm_remote import VLLMBackend

    return VLLMBackend().parse_generation_response(out)


def test_reply_is_what_arearls_parser_reads(server, ref_model):
    out = complete(server, PROMPT, 6, ignore_eos=True, temperature=0.7)
    choice = out["choices"][0]
    assert out["object"] == "text_completion" and choice["finish_reason"] == "length"
    assert choice["stop_reason"] is None
    lp = choice["logprobs"]
    assert set(lp) == {"text_offset", "token_logprobs", "tokens", "top_logprobs"}
    assert all(t.startswith("token_id:") for t in lp["tokens"])
    assert lp["top_logprobs"] == [
        {t: v} for t, v in zip(lp["tokens"], lp["token_logprobs"], strict=True)
    ]
    assert out["usage"]["completion_tokens"] == 6 == len(lp["tokens"])
    got = parsed(out)
    assert got.stop_reason == "length" and len(got.output_tokens) == 6
    # vLLM's default logprobs mode is raw: before temperature (SGLang's: after).
    want = recompute(ref_model, PROMPT, got.output_tokens, 1.0)
    assert torch.allclose(torch.tensor(got.output_logprobs), want, atol=1e-4)


def test_stop_token_ids_hold_under_ignore_eos(server):
    every_id = list(range(512))
    out = complete(server, PROMPT, 20, stop_token_ids=every_id, ignore_eos=True)
    choice, got = out["choices"][0], parsed(out)
    # vLLM: ignore_eos leaves stop_token_ids in force (SGLang: it disables them).
    assert choice["finish_reason"] == "stop" == got.stop_reason
    assert len(got.output_tokens) == 1 and choice["stop_reason"] == got.output_tokens[0]
    # A stop token as the last allowed token is a stop (SGLang: length).
    out = complete(server, PROMPT, 1, stop_token_ids=every_id)
    assert out["choices"][0]["finish_reason"] == "stop"


def test_eos_has_no_stop_reason(server, tiny_model_dir):
    from transformers import AutoTokenizer

    eos = AutoTokenizer.from_pretrained(tiny_model_dir).eos_token_id
    # Seeded sampling from the seeded tiny model: the same draws every run, so
    # one of them ends on the model's own EOS every time, or the test fails.
    for seed in range(40):
        out = complete(server, PROMPT, 30, temperature=3.0, seed=seed)
        choice = out["choices"][0]
        ids = parsed(out).output_tokens
        if choice["finish_reason"] == "stop" and ids[-1] == eos:
            assert choice["stop_reason"] is None  # the tokenizer's EOS: None
            return
    pytest.fail("no seed of 40 ended on EOS: the tiny model or the seeding changed")


def test_over_long_requests_are_vllms_400(server):
    n = CONTEXT - 4
    assert complete(server, [5] * n, 4)["choices"][0]["finish_reason"] == "length"
    status, out = call(server, "/v1/completions", body([5] * n, 5))
    assert status == 400 and out["error"]["type"] == "BadRequestError"
    assert out["error"]["code"] == 400 and out["error"]["param"] == "max_tokens"
    assert out["error"]["message"] == (
        f"'max_tokens' or 'max_completion_tokens' is too large: 5. This model's "
        f"maximum context length is {CONTEXT} tokens and your request has {n} "
        f"input tokens (5 > {CONTEXT} - {n}). (parameter=max_tokens, value=5)"
    )
    status, out = call(server, "/v1/completions", body([5] * CONTEXT, 1))
    assert status == 400 and out["error"]["param"] == "input_tokens"
    assert out["error"]["message"].startswith(
        f"This model's maximum context length is {CONTEXT} tokens. However, your "
        f"request has {CONTEXT} input tokens."
    )


def test_sglang_routes_are_not_served(server):
    with urllib.request.urlopen(f"{server.url}/health", timeout=10) as r:
        assert r.status == 200 and r.read() == b""  # vLLM's empty 200
    for path in ("/generate", "/pause_generation", "/update_weights_from_disk"):
        assert call_status(server, path) == 404


def call_status(server, path):
    try:
        return call(server, path, {})[0]
    except ValueError:  # aiohttp's plain-text 404
        return 404


def test_pause_aborts_with_partial_output_and_holds_new_requests(server):
    results = {}

    def run(key, prompt, n):
        results[key] = complete(server, prompt, n, ignore_eos=True)

    long = threading.Thread(target=run, args=("long", PROMPT, CONTEXT - 10))
    long.start()
    wait_running(server)
    status, reply = call(server, "/areal_pause_generation", {})
    assert status == 200 and reply == {
        "success": True,
        "message": "Generation paused and all requests aborted",
    }
    long.join(20)
    choice = results["long"]["choices"][0]
    assert choice["finish_reason"] == "abort"
    assert 0 < len(choice["logprobs"]["tokens"]) < CONTEXT - 10
    late = threading.Thread(target=run, args=("late", PROMPT, 3))
    late.start()
    time.sleep(0.5)
    assert late.is_alive()  # held while paused
    assert call(server, "/areal_continue_generation", {})[0] == 200
    late.join(20)
    assert results["late"]["choices"][0]["finish_reason"] == "length"


def test_remote_vllm_engine(server, ref_model, tiny_model_dir, tmp_path, monkeypatch):
    """AReaL's real client: agenerate with stops, a pause mid-request, then a
    disk update and the version it sets."""
    from areal.api.cli_args import GenerationHyperparameters, InferenceEngineConfig
    from areal.api.io_struct import ModelRequest, WeightUpdateMeta
    from areal.engine.vllm_remote import RemotevLLMEngine, VLLMBackend

    config = InferenceEngineConfig(
        backend="vllm:d1", consumer_batch_size=8, max_concurrent_rollouts=8,
        max_head_offpolicyness=10, setup_timeout=60, request_timeout=120,
    )  # fmt: skip
    engine = RemotevLLMEngine(config)
    engine.initialize(addr=server.addr, train_data_parallel_size=1)
    parsed = parsed_stop_reasons(monkeypatch, VLLMBackend)

    def request(prompt, n, **kw):
        gconfig = GenerationHyperparameters(max_new_tokens=n, temperature=1.0, **kw)
        return ModelRequest(input_ids=list(prompt), gconfig=gconfig)

    async def concurrent():
        reqs = [request(PROMPT[: i + 1], 10 + i, ignore_eos=True) for i in range(4)]
        reqs.append(request(PROMPT, 30, stop_token_ids=list(range(512))))
        return await asyncio.gather(*[engine.agenerate(r) for r in reqs])

    async def interrupted():
        n = CONTEXT - len(PROMPT)
        task = asyncio.create_task(
            engine.agenerate(request(PROMPT, n, ignore_eos=True))
        )
        await asyncio.to_thread(wait_running, server)
        # The trainer's order (PPOTrainer.train's rollout.pause()): no request
        # goes out until resume(), so the tokens after the update carry version
        # 1 whether AReaL stamps them at reply (1.0.4, the v2.0.0 tag) or at send
        # (AReaL main, #1569; tests/integration/test_standin_generate.py).
        engine.pause()
        await asyncio.to_thread(engine.pause_generation)
        await until(lambda: "abort" in parsed, "the aborted reply")
        engine.set_version(1)  # as after a weight update
        await asyncio.to_thread(engine.continue_generation)
        engine.resume()
        return await task

    try:
        resps = asyncio.run(concurrent())
        for i, r in enumerate(resps[:4]):
            assert r.stop_reason == "length" and len(r.output_tokens) == 10 + i
            assert len(r.output_logprobs) == len(r.output_versions) == 10 + i
        assert resps[4].stop_reason == "stop" and len(resps[4].output_tokens) == 1

        r = asyncio.run(interrupted())
        assert r.stop_reason == "length" and len(r.output_tokens) == CONTEXT - len(
            PROMPT
        )
        assert r.output_versions[0] == 0 and r.output_versions[-1] == 1
        want = recompute(ref_model, PROMPT, r.output_tokens, 1.0)
        assert torch.allclose(torch.tensor(r.output_logprobs), want, atol=1e-4)

        other = tmp_path / "other"
        model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
        with torch.no_grad():
            model.model.norm.weight.mul_(0.5)
        model.save_pretrained(other)
        shutil.copy(tiny_model_dir / "tokenizer.json", other)
        # The request AReaL's backend builds (the trainer's name_resolve
        # handshake around it is the e2e run's): paused, loaded, resumed.
        meta = WeightUpdateMeta(type="disk", path=str(other))
        (update,) = VLLMBackend().build_disk_weight_update_requests(meta).requests
        engine.pause_generation()
        status, reply = call(server, update.endpoint, update.payload)
        assert status == 200
        assert reply == {"success": True, "message": "TP rank: 0 success\n"}
        engine.set_version(2)
        engine.continue_generation()
        assert call(server, "/weights_digest")[1]["digest"] == weights_digest(model)
        r = asyncio.run(engine.agenerate(request(PROMPT, 3, ignore_eos=True)))
        assert r.output_versions == [2, 2, 2]
    finally:
        engine.destroy()
        call(server, "/areal_continue_generation", {})

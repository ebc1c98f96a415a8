"""Where SGLang 0.5.10.post1 and the stand-in could differ: the stand-in follows SGLang.

- A prompt plus ``max_new_tokens`` must stay below the context length (400 with
  SGLang's messages otherwise); the workflow refuses the same turns.
- ``/pause_generation`` (mode "abort", SGLang's default) ends queued requests
  too, with SGLang's "Abort in waiting queue"; AReaL's client resubmits them.
- Under ``skip_tokenizer_init`` (AReaL's setting) stop strings are refused:
  SGLang cannot match them without its tokenizer. A ``null`` stop token id
  (AReaL adds the pad id, None for a tokenizer without one) is accepted.

``waiting`` and ``skip_tokenizer_init`` in ``/get_server_info`` are stand-in only.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from standin.launch import StandinServer
from tests.http import call
from tests.integration.test_standin_server import wait_for

PROMPT = [5, 17, 42, 99, 3, 250, 7]
CONTEXT = 32


def generate(server, input_ids, **sampling):
    body = {
        "input_ids": input_ids,
        "sampling_params": {"max_new_tokens": 4, **sampling},
        "return_logprob": True,
    }
    return call(server, "/generate", body)


@pytest.fixture(scope="module")
def small(tiny_model_dir, tmp_path_factory):
    """As AReaL launches SGLang: a context length, no tokenizer."""
    log = tmp_path_factory.mktemp("protocol") / "server.log"
    args = ["--context-length", str(CONTEXT), "--skip-tokenizer-init"]
    with StandinServer(tiny_model_dir, log_file=log, extra_args=args) as server:
        yield server


def test_prompt_plus_new_tokens_must_stay_below_the_context_length(small):
    status, out = generate(small, list(range(1, 25)), max_new_tokens=CONTEXT - 24)
    assert status == 400
    assert out["error"]["message"].startswith(
        "Requested token count exceeds the model's maximum context length of 32 "
        "tokens. You requested a total of 32 tokens: 24 tokens from the input "
        "messages and 8 tokens for the completion."
    )
    status, out = generate(
        small, list(range(1, 25)), max_new_tokens=CONTEXT - 25, ignore_eos=True
    )
    assert status == 200 and len(out["output_ids"]) == CONTEXT - 25
    status, out = generate(small, list(range(1, CONTEXT + 1)))
    assert status == 400
    assert out["error"]["message"] == (
        "The input (32 tokens) is longer than the model's context length (32 tokens)."
    )


def test_stop_strings_are_refused_without_a_tokenizer(small, standin_server):
    status, out = generate(small, PROMPT, stop=["\n"])
    assert status == 400 and "skip_tokenizer_init" in out["error"]["message"]
    # A server that loaded its tokenizer honours them (as SGLang does).
    assert generate(standin_server, PROMPT, stop=["\n"])[0] == 200


def test_a_null_stop_token_id_is_accepted(small):
    status, out = generate(small, PROMPT, stop_token_ids=[None, 3], ignore_eos=True)
    assert status == 200 and len(out["output_ids"]) == 4
    assert "text" not in out  # no tokenizer, no text (as SGLang)


@pytest.fixture(scope="module")
def one_slot(tiny_model_dir, tmp_path_factory):
    """One running request at a time, so the next ones queue."""
    log = tmp_path_factory.mktemp("one_slot") / "server.log"
    args = ["--max-batch-size", "1"]
    with StandinServer(tiny_model_dir, log_file=log, extra_args=args) as server:
        yield server


def test_pause_aborts_running_and_queued_requests(one_slot):
    results: dict[str, dict] = {}

    def run(key, n):
        results[key] = generate(one_slot, PROMPT, max_new_tokens=n, ignore_eos=True)[1]

    threads = [threading.Thread(target=run, args=("running", 20000))]
    threads[0].start()
    wait_for(one_slot, "running", 1)
    threads += [threading.Thread(target=run, args=(k, 8)) for k in ("q1", "q2")]
    for t in threads[1:]:
        t.start()
    wait_for(one_slot, "waiting", 2)
    try:
        assert call(one_slot, "/pause_generation", {})[0] == 200
        for t in threads:
            t.join(20)
        running = results["running"]["meta_info"]
        assert running["finish_reason"]["type"] == "abort"
        assert running["finish_reason"]["message"] == "Aborted"
        assert 0 < running["completion_tokens"] < 20000
        for key in ("q1", "q2"):
            meta = results[key]["meta_info"]
            assert meta["finish_reason"] == {
                "type": "abort",
                "message": "Abort in waiting queue",
            }
            assert meta["completion_tokens"] == 0
            assert meta["output_token_logprobs"] == []
        # Sent while paused: held until the resume, never aborted by a pause.
        late = threading.Thread(target=run, args=("late", 3))
        late.start()
        wait_for(one_slot, "waiting", 1)
        assert call(one_slot, "/pause_generation", {})[0] == 200
        assert late.is_alive()
    finally:
        assert call(one_slot, "/continue_generation", {})[0] == 200
    late.join(20)
    assert results["late"]["meta_info"]["finish_reason"]["type"] == "length"


def test_in_place_pause_keeps_requests_running_after_the_resume(one_slot):
    results = {}
    t = threading.Thread(
        target=lambda: results.update(
            out=generate(one_slot, PROMPT, max_new_tokens=400, ignore_eos=True)[1]
        )
    )
    t.start()
    wait_for(one_slot, "running", 1)
    assert call(one_slot, "/pause_generation", {"mode": "in_place"})[0] == 200
    time.sleep(0.3)
    assert t.is_alive()
    assert call(one_slot, "/continue_generation", {})[0] == 200
    t.join(30)
    assert results["out"]["meta_info"]["finish_reason"]["type"] == "length"
    assert results["out"]["meta_info"]["completion_tokens"] == 400
    status, out = call(one_slot, "/pause_generation", {"mode": "sideways"})
    assert status == 400 and "in_place" in out["message"]


def test_areal_resubmits_requests_aborted_in_the_queue(one_slot):
    """AReaL's client: queued requests aborted by a pause still complete whole."""
    from areal.api.cli_args import GenerationHyperparameters, InferenceEngineConfig
    from areal.api.io_struct import ModelRequest
    from areal.engine.sglang_remote import RemoteSGLangEngine

    engine = RemoteSGLangEngine(
        InferenceEngineConfig(backend="sglang:d1", setup_timeout=60)
    )
    engine.initialize(addr=one_slot.addr, train_data_parallel_size=1)

    def request(n):
        gconfig = GenerationHyperparameters(max_new_tokens=n, ignore_eos=True)
        return ModelRequest(input_ids=list(PROMPT), gconfig=gconfig)

    async def paused_midway():
        tasks = [asyncio.create_task(engine.agenerate(request(200))) for _ in range(3)]
        await asyncio.to_thread(wait_for, one_slot, "waiting", 2)
        await asyncio.to_thread(engine.pause_generation)
        await asyncio.sleep(0.3)
        await asyncio.to_thread(engine.continue_generation)
        return await asyncio.gather(*tasks)

    try:
        for resp in asyncio.run(paused_midway()):
            assert resp.stop_reason == "length" and len(resp.output_tokens) == 200
    finally:
        engine.destroy()
        call(one_slot, "/continue_generation", {})


def test_prefix_cache_hits_are_reported_as_sglangs_cached_tokens(small):
    first = [11, 12, 13, 14, 15, 16]
    status, out = generate(small, first)
    assert status == 200 and out["meta_info"]["cached_tokens"] == 0
    # a group's next episode: the same section, its own memory
    _, out = generate(small, first[:4] + [21, 22])
    assert out["meta_info"]["cached_tokens"] == 4
    _, out = generate(small, first)  # all cached but the last, as SGLang
    assert out["meta_info"]["cached_tokens"] == len(first) - 1
    assert call(small, "/flush_cache", {})[0] == 200
    _, out = generate(small, first)
    assert out["meta_info"]["cached_tokens"] == 0

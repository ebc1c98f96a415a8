"""The CPU stand-in SGLang server's ``/generate`` (standin.server): what a
generation returns (finish reasons, stop tokens, length caps, seeds), and its
logprobs checked against the tiny model's forward pass, the way AReaL's actor
computes them: one request, concurrent batched requests, prompt scoring, and
through AReaL's own client across a pause.
"""

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from transformers import AutoModelForCausalLM

from tests.areal_release import versions_stamped_at_send
from tests.http import call
from tests.integration.test_standin_server import (
    PROMPT,
    generate,
    pairs,
    wait_running,
)


@pytest.fixture(scope="module")
def ref_model(tiny_model_dir):
    return AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()


def recompute(model, prompt, output, temperature):
    """Logprobs of ``output`` given ``prompt`` the way AReaL's actor computes them."""
    with torch.no_grad():
        logits = model(torch.tensor([prompt + output])).logits[0].float()
    logp = torch.log_softmax(logits[len(prompt) - 1 : -1] / temperature, dim=-1)
    return logp.gather(1, torch.tensor(output)[:, None])[:, 0]


def parsed_stop_reasons(monkeypatch, backend_cls) -> list[str]:
    """The stop reasons AReaL's client has parsed so far, in order.

    On AReaL 1.0.4 an aborted reply's tokens take the version current when the
    reply is parsed (the stamp follows the parse with no await between), so a
    test waits for ``"abort"`` here before moving the version, rather than
    sleeping and hoping the reply has arrived."""
    seen: list[str] = []
    parse = backend_cls.parse_generation_response

    def spy(backend, result):
        out = parse(backend, result)
        seen.append(out.stop_reason)
        return out

    monkeypatch.setattr(backend_cls, "parse_generation_response", spy)
    return seen


async def until(done, what: str, timeout: float = 60.0) -> None:
    """Poll ``done()`` on the event loop until it holds."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"never happened: {what}")
        await asyncio.sleep(0.01)


def test_generate_meta_info(standin_server):
    out = generate(standin_server, PROMPT, max_new_tokens=6, ignore_eos=True)
    meta = out["meta_info"]
    assert meta["finish_reason"] == {"type": "length", "length": 6}
    assert meta["prompt_tokens"] == len(PROMPT) and meta["completion_tokens"] == 6
    assert [t for _, t, _ in pairs(out)] == out["output_ids"]
    for lp, tok, extra in pairs(out):
        assert (
            isinstance(lp, float) and lp <= 0 and isinstance(tok, int) and extra is None
        )
    assert isinstance(out["text"], str) and isinstance(meta["e2e_latency"], float)


def test_stop_token_is_included(standin_server, ref_model):
    every_id = list(range(ref_model.config.vocab_size))
    out = generate(standin_server, PROMPT, max_new_tokens=50, stop_token_ids=every_id)
    meta = out["meta_info"]
    assert len(out["output_ids"]) == 1 and len(pairs(out)) == 1
    assert meta["finish_reason"] == {"type": "stop", "matched": out["output_ids"][0]}
    # SGLang semantics: ignore_eos also disables stop_token_ids.
    out = generate(
        standin_server,
        PROMPT,
        max_new_tokens=5,
        stop_token_ids=every_id,
        ignore_eos=True,
    )
    assert out["meta_info"]["finish_reason"]["type"] == "length"
    assert len(out["output_ids"]) == 5


def test_stops_on_a_sampled_stop_token(standin_server):
    # Make the greedy first token a stop token: it ends generation and is kept.
    first = generate(standin_server, PROMPT, max_new_tokens=1, temperature=0.0)
    eos = first["output_ids"][0]
    out = generate(
        standin_server, PROMPT, max_new_tokens=30, temperature=0.0, stop_token_ids=[eos]
    )
    assert out["output_ids"] == [eos]
    assert out["meta_info"]["finish_reason"] == {"type": "stop", "matched": eos}


def test_length_cap(standin_server):
    for n in (1, 13):
        out = generate(standin_server, PROMPT, max_new_tokens=n, ignore_eos=True)
        assert len(out["output_ids"]) == n == out["meta_info"]["completion_tokens"]
        assert out["meta_info"]["finish_reason"]["type"] == "length"


@pytest.mark.parametrize(
    "temperature,extra",
    [(1.0, {}), (0.7, {}), (0.7, {"top_p": 0.8, "top_k": 40}), (0.0, {})],
)
def test_logprobs_match_actor_recompute(standin_server, ref_model, temperature, extra):
    out = generate(
        standin_server,
        PROMPT,
        max_new_tokens=24,
        temperature=temperature,
        ignore_eos=True,
        **extra,
    )
    got = torch.tensor([lp for lp, _, _ in pairs(out)])
    # Greedy requests report temperature-1 logprobs (as SGLang does).
    want = recompute(ref_model, PROMPT, out["output_ids"], temperature or 1.0)
    assert torch.allclose(got, want, atol=1e-4), (got - want).abs().max()


def test_greedy_is_deterministic(standin_server, ref_model):
    a = generate(
        standin_server, PROMPT, max_new_tokens=16, temperature=0.0, ignore_eos=True
    )
    b = generate(
        standin_server, PROMPT, max_new_tokens=16, temperature=0.0, ignore_eos=True
    )
    assert a["output_ids"] == b["output_ids"]
    ids = list(PROMPT)
    with torch.no_grad():
        for _ in range(16):
            ids.append(int(ref_model(torch.tensor([ids])).logits[0, -1].argmax()))
    assert ids[len(PROMPT) :] == a["output_ids"]


def test_sampling_seed_is_reproducible(standin_server):
    a = generate(
        standin_server, PROMPT, max_new_tokens=16, ignore_eos=True, sampling_seed=7
    )
    b = generate(
        standin_server, PROMPT, max_new_tokens=16, ignore_eos=True, sampling_seed=7
    )
    assert a["output_ids"] == b["output_ids"]


def test_concurrent_requests_are_batched_correctly(standin_server, ref_model):
    g = torch.Generator().manual_seed(0)
    prompts = [
        torch.randint(0, 500, (n,), generator=g).tolist()
        for n in (3, 40, 9, 120, 1, 64, 17, 200)
    ]
    lengths = [30, 5, 60, 20, 45, 12, 33, 8]
    with ThreadPoolExecutor(len(prompts)) as pool:
        outs = list(
            pool.map(
                lambda a: generate(
                    standin_server, a[0], max_new_tokens=a[1], ignore_eos=True
                ),
                zip(prompts, lengths, strict=True),
            )
        )
    for prompt, n, out in zip(prompts, lengths, outs, strict=True):
        assert len(out["output_ids"]) == n and len(pairs(out)) == n
        got = torch.tensor([lp for lp, _, _ in pairs(out)])
        assert torch.allclose(
            got, recompute(ref_model, prompt, out["output_ids"], 1.0), atol=1e-4
        )


def test_input_token_logprobs_for_scoring(standin_server, ref_model):
    body = {
        "input_ids": PROMPT,
        "sampling_params": {"max_new_tokens": 1, "temperature": 0.0},
        "return_logprob": True,
        "logprob_start_len": 2,
    }
    status, out = call(standin_server, "/generate", body)
    assert status == 200
    rows = out["meta_info"]["input_token_logprobs"]
    assert [t for _, t, _ in rows] == PROMPT[2:]
    want = recompute(ref_model, PROMPT[:2], PROMPT[2:], 1.0)
    assert torch.allclose(torch.tensor([lp for lp, _, _ in rows]), want, atol=1e-4)


def test_areal_remote_sglang_engine(standin_server, ref_model, monkeypatch):
    """AReaL's real client: concurrent agenerate, then pause/resume mid-request.

    The weight version each output token carries (``output_versions``) is the
    version current when the reply holding it arrived on AReaL 1.0.4 and the
    v2.0.0 tag, and the version current when its request was sent on AReaL's
    main after the tag (#1569): `versions_stamped_at_send` finds out which rule
    the installed AReaL follows. In the trainer's order (new requests held
    while the weights change, ``PPOTrainer.train``'s ``rollout.pause()``) both
    rules give each token the version that generated it; with the server
    paused alone, a request resubmitted before the version moved keeps the old
    one on main (docs/areal-versions.md)."""
    from areal.api.cli_args import GenerationHyperparameters, InferenceEngineConfig
    from areal.api.io_struct import ModelRequest
    from areal.engine.sglang_remote import RemoteSGLangEngine, SGLangBackend

    config = InferenceEngineConfig(
        backend="sglang:d1", consumer_batch_size=8, max_concurrent_rollouts=8,
        max_head_offpolicyness=10, setup_timeout=60, request_timeout=120,
    )  # fmt: skip
    engine = RemoteSGLangEngine(config)
    engine.initialize(addr=standin_server.addr, train_data_parallel_size=1)
    parsed = parsed_stop_reasons(monkeypatch, SGLangBackend)

    def request(prompt, n, **kw):
        gconfig = GenerationHyperparameters(max_new_tokens=n, temperature=1.0, **kw)
        return ModelRequest(input_ids=list(prompt), gconfig=gconfig)

    async def concurrent():
        reqs = [request(PROMPT[: i + 1], 10 + i, ignore_eos=True) for i in range(6)]
        reqs.append(request(PROMPT, 30, stop_token_ids=list(range(512))))
        return await asyncio.gather(*[engine.agenerate(r) for r in reqs])

    async def interrupted(version, trainer_order):
        task = asyncio.create_task(
            engine.agenerate(request(PROMPT, 1500, ignore_eos=True))
        )
        await asyncio.to_thread(wait_running, standin_server)
        if trainer_order:
            engine.pause()  # no request goes out until resume()
        aborts = parsed.count("abort")
        await asyncio.to_thread(engine.pause_generation)
        await until(lambda: parsed.count("abort") > aborts, "the aborted reply")
        engine.set_version(version)  # as after a weight update
        await asyncio.to_thread(engine.continue_generation)
        if trainer_order:
            engine.resume()
        return await task

    def check(r):
        assert r.stop_reason == "length" and len(r.output_tokens) == 1500
        assert len(r.output_logprobs) == len(r.output_versions) == 1500
        assert r.output_versions == sorted(r.output_versions)
        got = torch.tensor(r.output_logprobs)
        want = recompute(ref_model, PROMPT, r.output_tokens, 1.0)
        assert torch.allclose(got, want, atol=1e-4)
        return r.output_versions[0], r.output_versions[-1]

    try:
        resps = asyncio.run(concurrent())
        for i, r in enumerate(resps[:6]):
            assert r.stop_reason == "length" and len(r.output_tokens) == 10 + i
            assert (
                len(r.output_logprobs) == len(r.output_versions) == len(r.output_tokens)
            )
            assert r.input_tokens == PROMPT[: i + 1] and set(r.output_versions) == {0}
        assert resps[6].stop_reason == "stop" and len(resps[6].output_tokens) == 1

        # The trainer's order: tokens before the pause carry version 0, the
        # resubmitted rest version 1, under either rule.
        assert check(asyncio.run(interrupted(1, trainer_order=True))) == (0, 1)
        # The server paused alone: the client resubmits at once (version 1) and
        # the server holds the request while the version moves to 2.
        last = 1 if versions_stamped_at_send() else 2
        assert check(asyncio.run(interrupted(2, trainer_order=False))) == (1, last)
    finally:
        engine.destroy()
        call(standin_server, "/continue_generation", {})

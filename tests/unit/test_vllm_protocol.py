"""Where the stand-in's vLLM mode answers unlike its SGLang mode (each as the
engine it stands in for does; ``standin.vllm_protocol``), and how a run picks its
engine (``memagent_workflow.infra.engines``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from memagent_workflow.infra import engines
from standin.launch import server_flags
from standin.protocol import (
    GenRequest,
    SamplingParams,
    check_context_length,
    sample_token,
)
from standin.vllm_protocol import (
    CompletionRequest,
    VllmRefusal,
    check_model_len,
    completion_params,
    completion_response,
)

TOKENIZER = SimpleNamespace(eos_token_id=7)


def finished(cls, out, **params):
    p = SamplingParams(max_new_tokens=params.pop("max_new_tokens", 4), **params)
    req = cls(input_ids=[1, 2], params=p, on_done=lambda r: None)
    for t in out:
        req.append(t, -1.0)
    return req.check_finished({7, 9}, 100, TOKENIZER)


def test_length_rule_allows_what_sglang_refuses():
    assert check_model_len(60, 4, 64) == 4  # prompt + new == max_model_len
    with pytest.raises(ValueError, match="Requested token count"):
        check_context_length(60, 4, 64)  # SGLang: must stay below
    assert check_model_len(60, None, 64) == 4  # vLLM's default: what is left
    with pytest.raises(VllmRefusal, match=r"\(parameter=max_tokens, value=5\)$"):
        check_model_len(60, 5, 64)
    with pytest.raises(VllmRefusal, match="your request has 64 input tokens"):
        check_model_len(64, 1, 64)


def test_stop_order_and_reasons():
    # A stop token as the last allowed token: vLLM stop, SGLang length.
    assert finished(CompletionRequest, [3, 4, 5, 11], stop_token_ids=[11]) == {
        "type": "stop",
        "matched": 11,
    }
    assert finished(GenRequest, [3, 4, 5, 11], stop_token_ids=[11])["type"] == "length"
    # ignore_eos: vLLM keeps stop_token_ids in force, SGLang drops them.
    on = dict(stop_token_ids=[11], ignore_eos=True)
    assert finished(CompletionRequest, [11], **on)["type"] == "stop"
    assert finished(GenRequest, [11], **on) is None
    # The tokenizer's EOS has no stop_reason; a generation-config EOS has its id.
    assert finished(CompletionRequest, [7]) == {"type": "stop", "matched": None}
    assert finished(CompletionRequest, [9]) == {"type": "stop", "matched": 9}
    assert finished(CompletionRequest, [9], ignore_eos=True) is None


def test_raw_logprobs_ignore_temperature():
    logits = torch.randn(50, generator=torch.Generator().manual_seed(0))
    for raw in (False, True):
        p = SamplingParams(temperature=0.5, raw_logprobs=raw)
        tok, lp = sample_token(logits, p, torch.Generator().manual_seed(1))
        scale = 1.0 if raw else 0.5
        assert lp == pytest.approx(float(torch.log_softmax(logits / scale, -1)[tok]))


def test_completion_params_and_refusals():
    p = completion_params({"temperature": 0.7, "top_k": -1, "seed": 3})
    assert p.raw_logprobs and p.top_k == -1 and p.sampling_seed == 3
    for bad in ({"stream": True}, {"n": 2}, {"logprobs": 5}, {"echo": True}):
        with pytest.raises(VllmRefusal):
            completion_params(bad)


def test_abort_reply_keeps_partial_tokens():
    req = CompletionRequest(
        input_ids=[1], params=SamplingParams(), on_done=lambda r: None, logprobs=0,
        as_token_ids=True,
    )  # fmt: skip
    req.append(5, -0.5)
    req.finish({"type": "abort", "message": "Aborted"})
    choice = completion_response(req, None, "m", with_text=False)["choices"][0]
    assert choice["finish_reason"] == "abort" and choice["stop_reason"] is None
    assert choice["logprobs"]["tokens"] == ["token_id:5"]


def test_vllm_server_args_become_standin_flags():
    args = {"model": "M", "seed": 3, "max_model_len": 64, "max_num_seqs": 32,
            "gpu_memory_utilization": 0.9, "skip_tokenizer_init": False}  # fmt: skip
    assert server_flags(args, "vllm") == [
        "--model-path", "M", "--seed", "3", "--context-length", "64",
        "--max-batch-size", "32", "--protocol", "vllm",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="no LoRA"):
        server_flags({**args, "enable_lora": True}, "vllm")


@pytest.mark.parametrize(
    "backend,alloc,want",
    [
        ("sglang:d1", "", "sglang"),
        ("vllm:d2", "", "vllm"),
        ("vllm:d1", "vllm:d1+fsdp:d1", "vllm"),
        ("vllm:d4p1t1", "vllm[rollout]:d4p1t1+fsdp:d4p1t1", "vllm"),
    ],
)
def test_rollout_backend(backend, alloc, want):
    config = SimpleNamespace(
        rollout=SimpleNamespace(backend=backend), allocation_mode=alloc
    )
    assert engines.rollout_backend(config) == want


def test_allocation_mode_must_agree_with_rollout_backend():
    config = SimpleNamespace(
        rollout=SimpleNamespace(backend="sglang:d1"), allocation_mode="vllm:d1+fsdp:d1"
    )
    with pytest.raises(ValueError, match="rollout.backend=vllm:dN"):
        engines.rollout_backend(config)


def test_eval_picks_remote_vllm_engine():
    from areal.engine import RemotevLLMEngine

    from memagent_workflow.eval.engine import ClusterInference
    from standin.backend import StandinvLLMEngine
    from standin.eval import load_config
    from standin.eval_inference import StandinInference

    argv = ["--config", "config_eval_cpu.yaml", "rollout.backend=vllm:d1"]
    config = load_config(argv)
    assert ClusterInference(config).engine_class() is RemotevLLMEngine
    inference = StandinInference(config)
    assert inference.engine_class() is StandinvLLMEngine
    args = inference.server_args(1)
    assert args["max_model_len"] == config.gconfig.max_tokens
    assert args["model"] == config.actor.path

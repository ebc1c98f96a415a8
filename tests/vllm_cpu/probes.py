"""The smoke's model and its checks through AReaL's ``RemotevLLMEngine``."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import shutil
import time
import uuid
from pathlib import Path

import torch
from areal.api.cli_args import (
    GenerationHyperparameters,
    InferenceEngineConfig,
    NameResolveConfig,
)
from areal.api.io_struct import ModelRequest, ModelResponse, WeightUpdateMeta
from areal.engine.vllm_remote import RemotevLLMEngine
from areal.utils import name_resolve, names
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

from standin.config import StandinGRPOConfig
from standin.cpu_job import needle_spec
from standin.needle_model import build_tokenizer, init_model

# vLLM's CPU attention takes head sizes 32, 64, 80, ..., 256 only
# (CPUAttentionBackend.get_supported_head_sizes); config_cpu.yaml's needle model
# has 64 / 8 = 8 and kills the engine at its first generation.
HEADS = 2  # hidden 64 / 2 heads = head_dim 32
PROMPT = list(range(5, 21))  # 16 ids of the needle vocabulary
EXPERIMENT, TRIAL = "vllm-cpu-smoke", "probe"


def build_models(config: StandinGRPOConfig, model: Path, model_v2: Path) -> int:
    """config_cpu.yaml's needle model and tokenizer with head_dim 32, random (no
    warm start: a 3-step smoke needs no learned model), saved without the
    stand-in's build marker so the training job serves and trains it as it is;
    ``model_v2``: the same with lm_head halved, a visibly different checkpoint.
    Returns head_dim."""
    spec = dataclasses.replace(needle_spec(config), heads=HEADS)
    tokenizer = build_tokenizer(spec)
    with torch.random.fork_rng(devices=[]):
        hf = init_model(spec, tokenizer)
    for folder in (model, model_v2):
        shutil.rmtree(folder, ignore_errors=True)
        hf.save_pretrained(folder, safe_serialization=True)
        tokenizer.save_pretrained(folder)
    weights = model_v2 / "model.safetensors"
    state = load_file(weights)
    state["lm_head.weight"] = state["lm_head.weight"] * 0.5
    save_file(state, weights, metadata={"format": "pt"})
    return hf.config.hidden_size // hf.config.num_attention_heads


@torch.no_grad()
def reference_logprob(model: Path) -> float:
    """HF transformers' log-probability of the greedy next token after PROMPT."""
    hf = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32)
    logits = hf(input_ids=torch.tensor([PROMPT])).logits[0, -1]
    return torch.log_softmax(logits, -1).max().item()


class EngineProbe:
    """AReaL's vLLM client against the running server at ``addr``."""

    def __init__(self, addr: str, model: Path, workdir: Path) -> None:
        name_resolve.reconfigure(
            NameResolveConfig(type="nfs", nfs_record_root=str(workdir / "name_resolve"))
        )
        name_resolve.clear_subtree(names.trial_root(EXPERIMENT, TRIAL))
        config = InferenceEngineConfig(
            backend="vllm:d1",
            experiment_name=EXPERIMENT,
            trial_name=TRIAL,
            max_concurrent_rollouts=4,
            consumer_batch_size=1,
            setup_timeout=120,
            request_timeout=600,  # the first request compiles (21-69 s on 2 cores)
            tokenizer_path=str(model),
        )
        self.eos = build_eos(model)
        self.engine = RemotevLLMEngine(config)
        self.engine.initialize(addr=addr)
        self.version = 0

    def generate(self, n: int, greedy: bool = False) -> ModelResponse:
        """One generation of up to ``n`` tokens after PROMPT."""
        gconfig = GenerationHyperparameters(
            max_new_tokens=n, greedy=greedy, stop_token_ids=[self.eos]
        )
        request = ModelRequest(rid=uuid.uuid4().hex, input_ids=PROMPT, gconfig=gconfig)
        return asyncio.run(self.engine.agenerate(request))

    def check_generation(self, n: int = 8) -> ModelResponse:
        """A sampled generation: token ids, one finite logprob each, this version."""
        reply = self.generate(n)
        tokens, logprobs = reply.output_tokens, reply.output_logprobs
        assert 0 < len(tokens) <= n, reply
        assert len(logprobs) == len(tokens), reply
        assert all(math.isfinite(x) and x <= 0 for x in logprobs), logprobs
        assert set(reply.output_versions) == {self.version}, reply.output_versions
        assert reply.stop_reason in ("stop", "length"), reply.stop_reason
        return reply

    def greedy_logprob(self) -> float:
        """The served model's greedy next-token log-probability after PROMPT."""
        reply = self.generate(1, greedy=True)
        assert set(reply.output_versions) == {self.version}, reply.output_versions
        return reply.output_logprobs[0]

    def update_from_disk(self, path: Path) -> float:
        """AReaL's disk update (pause, load, version + 1, continue), as the
        trainer drives it; keeps the folder (AReaL deletes it by default)."""
        name_resolve.add(
            names.update_weights_from_disk(EXPERIMENT, TRIAL, self.version),
            str(time.time()),
            replace=True,
        )
        meta = WeightUpdateMeta(
            type="disk", path=str(path), clear_checkpoint_after_load=False
        )
        start = time.monotonic()
        self.engine.pause()
        self.engine.update_weights_from_disk(meta).result()
        self.version += 1
        self.engine.set_version(self.version)
        self.engine.resume()
        return time.monotonic() - start

    def destroy(self) -> None:
        """Close the client."""
        self.engine.destroy()


def build_eos(model: Path) -> int:
    """The model's end-of-sequence id."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model).eos_token_id

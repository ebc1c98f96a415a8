"""Distributed (xccl) weight updates into the stand-in, driven as AReaL's trainer does.

This test process plays the FSDP engine's part in
``_init_weight_update_from_distributed`` / ``_update_weights_from_distributed``:
AReaL's client sends the requests (``init_weights_update_group``,
``update_weights_from_distributed``), AReaL's ``init_custom_process_group`` opens
the gloo group as rank 0, and every tensor of every bucket is broadcast in order.
Each test runs in both protocols the stand-in speaks: SGLang's
(`RemoteSGLangEngine`: ``/init_weights_update_group``, one
``/update_weights_from_distributed`` per bucket) and AReaL's vLLM extension's
(`RemotevLLMEngine`: ``/areal_init_weights_update_group``, then per bucket
``/areal_set_update_weight_meta`` and ``/areal_update_weights_xccl``).
The weights travel as bfloat16, as the GPU recipe sends them. ``/weights_digest``
and the ``weight_syncs`` field of ``/get_server_info`` are stand-in only.
"""

from __future__ import annotations

import asyncio
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
import torch.distributed as dist
from transformers import AutoModelForCausalLM

from standin.launch import StandinServer, find_free_port
from standin.model import weights_digest
from tests.http import call

GROUP = "update_weight_group"  # AReaL's FSDP engine's name for it
SERVER_ARGS = {"sglang": [], "vllm": ["--protocol", "vllm"]}


def get(server, path):
    status, out = call(server, path)
    assert status == 200, out
    return out


@pytest.fixture(scope="module", params=sorted(SERVER_ARGS))
def protocol(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def server(protocol, tiny_model_dir, tmp_path_factory):
    """A stand-in of its own: these tests change its weights."""
    root = tmp_path_factory.mktemp(f"xccl_{protocol}")
    shutil.copytree(tiny_model_dir, root / "model")
    with StandinServer(
        root / "model", log_file=root / "server.log", extra_args=SERVER_ARGS[protocol]
    ) as srv:
        yield srv


@pytest.fixture(scope="module")
def trainer(protocol, server):
    """AReaL's client on the server and the trainer's side of a joined group."""
    from areal.api.alloc_mode import ModelAllocation
    from areal.api.cli_args import InferenceEngineConfig
    from areal.api.io_struct import WeightUpdateMeta
    from areal.engine import RemoteSGLangEngine, RemotevLLMEngine
    from areal.engine.core.distributed import init_custom_process_group

    backend = f"{protocol}:d1"
    cls = RemotevLLMEngine if protocol == "vllm" else RemoteSGLangEngine
    engine = cls(InferenceEngineConfig(backend=backend, setup_timeout=60))
    engine.initialize(addr=server.addr, train_data_parallel_size=1)
    meta = WeightUpdateMeta.from_fsdp_xccl(
        gen_allocation=ModelAllocation.from_str(backend, name="rollout")
    )
    meta.nccl_master_address = "127.0.0.1"
    meta.nccl_master_port = find_free_port()
    meta.nccl_group_name = GROUP
    joined = engine.init_weights_update_group(meta)
    group = init_custom_process_group(
        backend="gloo",
        world_size=2,  # the trainer and one server
        init_method=f"tcp://127.0.0.1:{meta.nccl_master_port}",
        rank=0,
        group_name=GROUP,
    )
    joined.result(timeout=120)
    try:
        yield engine, meta, group
    finally:
        engine.destroy()
        dist.destroy_process_group(group)  # the other protocol joins one anew


def specs_of(bucket):
    from areal.api.io_struct import ParamSpec

    return [
        ParamSpec(name, tuple(t.shape), str(t.dtype).split(".")[1])
        for name, t in bucket
    ]


def send(trainer, buckets):
    """One sync: pause, the requests + broadcasts of each bucket, resume."""
    engine, meta, group = trainer
    engine.pause_generation()
    try:
        for bucket in buckets:
            fut = engine.update_weights_from_distributed(meta, specs_of(bucket))
            for _, tensor in bucket:
                dist.broadcast(tensor, src=0, group=group)
            fut.result(timeout=120)
    finally:
        engine.continue_generation()


def new_weights(tiny_model_dir, seed: int) -> list[tuple[str, torch.Tensor]]:
    """The tiny model's parameters, perturbed and cast to bfloat16."""
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    gen = torch.Generator().manual_seed(seed)
    return [
        (name, (p + 0.01 * torch.randn(p.shape, generator=gen)).to(torch.bfloat16))
        for name, p in model.named_parameters()
    ]


def digest_as_served(tiny_model_dir, tensors) -> str:
    """What a float32 server holding ``tensors`` must report."""
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, t in tensors:
            params[name].copy_(t)
    return weights_digest(model)


def test_several_bf16_buckets_land_in_order(server, trainer, tiny_model_dir):
    engine = trainer[0]
    before = get(server, "/get_server_info")["n_updates"]
    tensors = new_weights(tiny_model_dir, seed=1)
    # Same-shaped tensors in one bucket (q_proj and o_proj are both 64 x 64):
    # a receiver that mixed up the order would serve them swapped.
    buckets = [tensors[:5], tensors[5:17], tensors[17:]]
    send(trainer, buckets)
    engine.set_version(engine.get_version() + 1)  # as the trainer does next
    assert get(server, "/weights_digest")["digest"] == digest_as_served(
        tiny_model_dir, tensors
    )
    info = get(server, "/get_server_info")
    assert info["n_updates"] == before + 1  # one sync: the served version advanced
    assert info["weight_syncs"][-1] == {
        "source": "distributed",
        "requests": 3,
        "tensors": len(tensors),
        "distinct_tensors": len(tensors),
        "dtypes": ["bfloat16"],
    }


def test_a_bucket_naming_an_unknown_tensor_changes_nothing(server, trainer):
    engine, meta, group = trainer
    before = get(server, "/weights_digest")["digest"]
    good = torch.ones(64, dtype=torch.bfloat16)
    bucket = [("model.norm.weight", good), ("model.no_such.weight", good[:3])]
    # The requests AReaL's backend builds for the bucket; the last one receives.
    builder = engine._engine.backend.build_distributed_weight_update_requests
    *first, receive = builder(meta, specs_of(bucket)).requests
    for req in first:  # vLLM: the bucket's meta first
        assert call(server, req.endpoint, req.payload)[0] == 200
    with ThreadPoolExecutor(1) as pool:
        reply = pool.submit(call, server, receive.endpoint, receive.payload, 120)
        for _, tensor in bucket:  # the whole bucket is still received
            dist.broadcast(tensor, src=0, group=group)
        status, out = reply.result(timeout=120)
    assert status == 400 and not out["success"]
    assert "no parameter 'model.no_such.weight'" in out["message"]
    assert get(server, "/weights_digest")["digest"] == before  # nothing half-loaded


def test_generation_resumes_after_the_sync_at_the_new_version(trainer):
    from areal.api.cli_args import GenerationHyperparameters
    from areal.api.io_struct import ModelRequest

    engine = trainer[0]
    gconfig = GenerationHyperparameters(max_new_tokens=4, ignore_eos=True)
    req = ModelRequest(input_ids=[5, 17, 42], gconfig=gconfig)
    out = asyncio.run(engine.agenerate(req))
    assert len(out.output_tokens) == 4
    assert out.output_versions == [engine.get_version()] * 4 != [0] * 4

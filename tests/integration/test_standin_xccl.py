"""Distributed (xccl) weight updates into the stand-in, driven as AReaL's trainer does.

This test process plays the FSDP engine's part in
``_init_weight_update_from_distributed`` / ``_update_weights_from_distributed``:
AReaL's client sends the requests (`RemoteSGLangEngine.init_weights_update_group`,
``update_weights_from_distributed``), AReaL's ``init_custom_process_group`` opens
the gloo group as rank 0, and every tensor of every bucket is broadcast in order.
The weights travel as bfloat16, as the GPU recipe sends them. ``/weights_digest``
and the ``weight_syncs`` field of ``/get_server_info`` are stand-in only.
"""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
import torch.distributed as dist
from transformers import AutoModelForCausalLM

from standin.launch import StandinServer, find_free_port
from standin.model import weights_digest
from tests.http import call


def get(server, path):
    with urllib.request.urlopen(f"{server.url}{path}", timeout=60) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def server(tiny_model_dir, tmp_path_factory):
    """A stand-in of its own: these tests change its weights."""
    root = tmp_path_factory.mktemp("xccl")
    shutil.copytree(tiny_model_dir, root / "model")
    with StandinServer(root / "model", log_file=root / "server.log") as srv:
        yield srv


@pytest.fixture(scope="module")
def trainer(server):
    """AReaL's client on the server and the trainer's side of a joined group."""
    from areal.api.alloc_mode import ModelAllocation
    from areal.api.cli_args import InferenceEngineConfig
    from areal.api.io_struct import WeightUpdateMeta
    from areal.engine.core.distributed import init_custom_process_group
    from areal.engine.sglang_remote import RemoteSGLangEngine

    engine = RemoteSGLangEngine(
        InferenceEngineConfig(backend="sglang:d1", setup_timeout=60)
    )
    engine.initialize(addr=server.addr, train_data_parallel_size=1)
    meta = WeightUpdateMeta.from_fsdp_xccl(
        gen_allocation=ModelAllocation.from_str("sglang:d1", name="rollout")
    )
    meta.nccl_master_address = "127.0.0.1"
    meta.nccl_master_port = find_free_port()
    meta.nccl_group_name = "update_weight_group"
    joined = engine.init_weights_update_group(meta)
    group = init_custom_process_group(
        backend="gloo",
        world_size=2,  # the trainer and one server
        init_method=f"tcp://127.0.0.1:{meta.nccl_master_port}",
        rank=0,
        group_name=meta.nccl_group_name,
    )
    joined.result(timeout=120)
    try:
        yield engine, meta, group
    finally:
        engine.destroy()


def send(trainer, buckets):
    """One sync: pause, one request + broadcasts per bucket, resume."""
    from areal.api.io_struct import ParamSpec

    engine, meta, group = trainer
    engine.pause_generation()
    try:
        for bucket in buckets:
            specs = [
                ParamSpec(name, tuple(t.shape), str(t.dtype).split(".")[1])
                for name, t in bucket
            ]
            fut = engine.update_weights_from_distributed(meta, specs)
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
    tensors = new_weights(tiny_model_dir, seed=1)
    # Same-shaped tensors in one bucket (q_proj and o_proj are both 64 x 64):
    # a receiver that mixed up the order would serve them swapped.
    buckets = [tensors[:5], tensors[5:17], tensors[17:]]
    send(trainer, buckets)
    assert get(server, "/weights_digest")["digest"] == digest_as_served(
        tiny_model_dir, tensors
    )
    sync = get(server, "/get_server_info")["weight_syncs"][-1]
    assert sync == {
        "source": "distributed",
        "requests": 3,
        "tensors": len(tensors),
        "distinct_tensors": len(tensors),
        "dtypes": ["bfloat16"],
    }


def test_a_bucket_naming_an_unknown_tensor_changes_nothing(server, trainer):
    _, _, group = trainer
    before = get(server, "/weights_digest")["digest"]
    good = torch.ones(64, dtype=torch.bfloat16)
    bucket = [("model.norm.weight", good), ("model.no_such.weight", good[:3])]
    body = {
        "names": [n for n, _ in bucket],
        "dtypes": ["bfloat16", "bfloat16"],
        "shapes": [[64], [3]],
        "group_name": "update_weight_group",
        "abort_all_requests": True,
    }
    with ThreadPoolExecutor(1) as pool:
        reply = pool.submit(call, server, "/update_weights_from_distributed", body, 120)
        for _, tensor in bucket:  # the whole bucket is still received
            dist.broadcast(tensor, src=0, group=group)
        status, out = reply.result(timeout=120)
    assert status == 400 and not out["success"]
    assert "no parameter 'model.no_such.weight'" in out["message"]
    assert get(server, "/weights_digest")["digest"] == before  # nothing half-loaded


def test_generation_resumes_after_the_sync(server):
    body = json.dumps(
        {"input_ids": [5, 17, 42], "sampling_params": {"max_new_tokens": 4}}
    ).encode()
    req = urllib.request.Request(
        f"{server.url}/generate",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        out = json.loads(r.read())
    assert len(out["output_ids"]) == 4

"""Faked machines for the preflight tests: GPUs, host, packages, Ray, and the
``config.json`` of Qwen2.5-7B, Qwen3-4B and Qwen2.5-1.5B written from their
published numbers (no download)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from memagent_workflow.preflight import Options, Run
from memagent_workflow.preflight.probes import (
    GPU,
    Host,
    PackageProbe,
    RayNode,
    RayState,
)

ROOT = Path(__file__).resolve().parents[2]
GIB = 2**30
H100_BYTES = int(79.6 * GIB)  # what an H100 80GB reports

# Qwen/Qwen2.5-7B-Instruct's config.json (the published model card numbers).
QWEN25_7B = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 3584,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "intermediate_size": 18944,
    "vocab_size": 152064,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
QWEN25_7B_PARAMS = 7_615_616_512  # the published parameter count

# Qwen/Qwen3-4B's config.json (model card): head_dim 128 is not hidden / heads
# (2560 / 32 = 80), tied embeddings, a per-head RMS norm on q and k, no biases.
QWEN3_4B = {
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "hidden_size": 2560,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 9728,
    "vocab_size": 151936,
    "max_position_embeddings": 40960,
    "attention_bias": False,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
}
QWEN3_4B_PARAMS = 4_022_468_096  # safetensors total on the hub

# Qwen/Qwen2.5-1.5B-Instruct's config.json: q/k/v biases, tied embeddings.
QWEN25_1B5 = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 1536,
    "num_hidden_layers": 28,
    "num_attention_heads": 12,
    "num_key_value_heads": 2,
    "intermediate_size": 8960,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
}
QWEN25_1B5_PARAMS = 1_543_714_304  # safetensors total on the hub


def write_model(folder: Path, cfg: dict = QWEN25_7B) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


def gpus(n: int = 8, sm=(9, 0), free_gib: float = 79.0, total=H100_BYTES) -> list[GPU]:
    return [
        GPU(i, "NVIDIA H100 80GB HBM3", sm, total, int(free_gib * GIB))
        for i in range(n)
    ]


class FakeHardware:
    def __init__(self, gpu_list=(), cpus: int = 128, memory_gib: float = 1024):
        self._gpus = list(gpu_list)
        self._host = Host(cpus, int(memory_gib * GIB))

    def gpus(self) -> list[GPU]:
        return list(self._gpus)

    def host(self) -> Host:
        return self._host


class FakePackages(PackageProbe):
    """Installed versions by name; the rest of the environment as given."""

    def __init__(
        self,
        versions: dict[str, str] | None = None,
        cuda: str | None = "12.8",
        nccl: str | None = "2.27.5",
        path_prefix: str | None = "/env",
    ):
        self.versions = {"torch": "2.9.1", **(versions or {})}
        self.cuda, self._nccl, self.path_prefix = cuda, nccl, path_prefix

    def version(self, dist):
        return self.versions.get(dist)

    def torch_cuda(self):
        return self.cuda

    def nccl(self):
        return self._nccl

    def path_python_prefix(self):
        return "/somewhere/bin/python3", self.path_prefix

    def own_prefix(self):
        return "/env"


class FakeRay:
    def __init__(self, nodes=None, error: str | None = None):
        self.state = RayState(nodes=list(nodes or []), error=error)

    def probe(self) -> RayState:
        return self.state


def h100_node(memory_gib: float, cpus: float = 128, gpus: float = 8) -> RayNode:
    return RayNode(f"10.0.0.{int(memory_gib) % 250}", cpus, gpus, memory_gib * GIB)


def load(config: str = "config.yaml", *overrides: str):
    """The config as the entry script that runs it loads it (a CPU config: the
    stand-in's entry)."""
    if "cpu" in config or "needle" in config:
        from standin.preflight import loaders

        load_config = loaders()["eval" if "eval" in config else "train"]
    elif "eval" in config:
        from examples.eval import load_config
    else:
        from examples.train import load_config
    return load_config(["--config", str(ROOT / config), *overrides])


def changed(cfg, **dotted):
    """A copy of ``cfg`` with ``a__b=value`` set at ``a.b`` (keys YAML may lack)."""
    cfg = copy.deepcopy(cfg)
    for key, value in dotted.items():
        *parents, leaf = key.split("__")
        target = cfg
        for p in parents:
            target = getattr(target, p)
        setattr(target, leaf, value)
    return cfg


def run_of(
    config,
    hardware=None,
    packages=None,
    ray=None,
    kind: str = "train",
    **options,
) -> Run:
    from standin.preflight import INPUTS_BY

    return Run(
        config,
        kind,
        Options(**options),
        hardware=hardware or FakeHardware(gpus()),
        packages=packages or FakePackages({"sglang": "0.5.10.post1"}),
        ray=ray or FakeRay(error="no cluster"),
        # a CPU config: its stand-in entry builds the model, data and Ray
        inputs_by=INPUTS_BY[kind] if hasattr(config, "standin") else None,
    )

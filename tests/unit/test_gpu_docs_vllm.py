"""docs/gpu-vllm.md: every launch command and every layout line there parses
through the project's loaders (examples/train.py's and eval.py's, AReaL's
``load_expr_config`` underneath) with vLLM as the rollout engine, the SPMD
launcher's allocation naming the same engine; the install command is the locked
second environment's; the preflight command fails on a CPU machine naming the
vLLM, FlashAttention and GPU items, and its sample lists the rows it prints."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import torch
from areal.api.alloc_mode import ModelAllocation, _AllocationMode

from tests.unit.test_preflight_cli import labels

ROOT = Path(__file__).resolve().parents[2]


def section() -> str:
    """The page up to its section on the real engine on CPU (CI's smoke)."""
    return (ROOT / "docs" / "gpu-vllm.md").read_text().split("\n## ", 1)[0]


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", section(), re.S)


def lines(block: str) -> list[list[str]]:
    joined = re.sub(r"\\\n\s*", " ", block)
    out = [ln.split("#", 1)[0].strip() for ln in joined.splitlines()]
    return [shlex.split(ln) for ln in out if ln]


def config_args(cmd: list[str]) -> list[str]:
    return cmd[cmd.index("--config") :]


def load(cmd: list[str]):
    """The config as the command's entry script loads it."""
    script = next(a for a in cmd if a.endswith(".py"))
    if script == "examples/eval.py":
        from examples.eval import load_config
    else:
        from examples.train import load_config
    return load_config(config_args(cmd))


LAUNCHES = lines(blocks("bash")[1])


def test_install_is_the_locked_second_environment():
    install = lines(blocks("bash")[0])
    assert install[0] == ["uv", "sync", "--locked", "--project", "envs/vllm"]
    assert install[1] == ["source", "envs/vllm/.venv/bin/activate"]
    lock = (ROOT / "envs" / "vllm" / "uv.lock").read_text()
    for name, version in [("vllm", "0.19.1"), ("torch", "2.10.0")]:
        assert f'name = "{name}"\nversion = "{version}"' in lock


def test_every_recipe_and_launch_style_is_shown():
    configs = {cmd[cmd.index("--config") + 1] for cmd in LAUNCHES}
    recipes = {p.name for p in ROOT.glob("config_qwen*.yaml")}
    assert configs == {"config.yaml", "config_eval.yaml", *recipes}
    assert any(
        cmd[:3] == ["python3", "-m", "areal.infra.launcher.local"] for cmd in LAUNCHES
    )


@pytest.mark.parametrize("cmd", LAUNCHES, ids=lambda c: " ".join(config_args(c)[1:]))
def test_each_launch_parses_with_vllm_as_the_engine(cmd):
    cfg = load(cmd)
    assert cfg.rollout.backend.startswith("vllm:")
    rollout = ModelAllocation.from_str(cfg.rollout.backend, name="rollout")
    assert rollout.backend == "vllm"
    assert cfg.vllm.model == cfg.actor.path
    assert cfg.vllm.max_model_len == cfg.gconfig.max_tokens
    if cfg.allocation_mode:  # the SPMD launcher starts what allocation_mode names
        alloc = _AllocationMode.from_str(cfg.allocation_mode)
        assert alloc.gen_backend == "vllm"
        assert alloc.gen.dp_size == rollout.parallel.dp_size
        assert alloc.gen.tp_size == rollout.parallel.tp_size
    if cfg.actor.use_lora:
        assert cfg.vllm.enable_lora and cfg.vllm.max_lora_rank >= cfg.actor.lora_rank


def layout_rows() -> list[list[str]]:
    """Each override line of the layout table (a row's every `...` span)."""
    rows = [r for r in section().splitlines() if r.startswith("| ") and "GPUs" not in r]
    spans = [re.findall(r"`([^`]+)`", r.rsplit(" | ", 1)[1]) for r in rows]
    return [shlex.split(s) for row in spans for s in row]


@pytest.mark.parametrize("overrides", layout_rows(), ids=lambda o: o[0])
def test_each_layout_parses_through_the_loader(overrides):
    from examples.train import load_config

    cfg = load_config(["--config", "config.yaml", *overrides])
    assert (
        ModelAllocation.from_str(cfg.rollout.backend, name="rollout").backend == "vllm"
    )
    ModelAllocation.from_str(cfg.actor.backend, name="actor")


def test_the_layout_table_has_the_four_sglang_layouts():
    assert len(layout_rows()) == 5  # the default's launcher line beside it


@pytest.fixture(scope="module")
def preflight() -> tuple[list[str], subprocess.CompletedProcess]:
    (cmd,) = lines(blocks("bash")[2])
    res = subprocess.run(
        cmd,  # verbatim, `uv run` included, as test_preflight_cli runs the SGLang one
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "100"},
        capture_output=True,
        text=True,
        timeout=900,
    )
    return cmd, res


def test_the_preflight_command_is_config_yaml_with_the_switch(preflight):
    cmd, _ = preflight
    assert cmd[3:] == [
        "examples/preflight.py", "--config", "config.yaml", "rollout.backend=vllm:d4p1t1",
    ]  # fmt: skip


@pytest.mark.skipif(torch.cuda.is_available(), reason="the verdicts of a CPU machine")
def test_on_cpu_it_fails_naming_vllm_flash_attention_and_gpus(preflight):
    _, res = preflight
    assert res.returncode == 1, res.stdout + res.stderr
    table = res.stdout
    for label, reason in [
        ("packages: vllm", "envs/vllm"),
        ("packages: FlashAttention (actor.attn_impl)", "vLLM brings no flash_attn"),
        ("hardware: GPUs", "run on the GPU node"),
    ]:
        after = table.split(f"FAIL {label}: ")[1]
        assert reason in " ".join(after.split()[:60])
        assert label in table.rsplit("blocking item(s): ", 1)[1]
    assert "sglang" not in table.rsplit("blocking item(s): ", 1)[1]


def test_the_docs_sample_has_the_rows_the_command_prints(preflight):
    _, res = preflight
    sample = blocks("text")[0]
    assert labels(sample) == labels(res.stdout)
    assert "memory: vLLM KV cache per server" in labels(sample)

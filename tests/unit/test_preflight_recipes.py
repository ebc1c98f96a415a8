"""The recipes for smaller budgets (docs/gpu-recipes.md, "Recipes for smaller budgets"):
the docs give one preflight command per recipe, and the preflight, given that
command with the model's published config.json, finds every memory and time row
ok on the GPU size the recipe claims and fails on a card too small for it. The
docs' numbers are the preflight's. Each recipe's config is checked in
test_preflight_recipe_configs.py."""

from __future__ import annotations

import os
import re
import shlex
import subprocess

import pytest
import torch

from examples import preflight
from memagent_workflow.preflight import Run, Verdict, run_checks
from memagent_workflow.preflight.memory_estimate import actor_memory, server_memory
from memagent_workflow.preflight.step import step_estimate
from tests.unit.preflight_fakes import (
    GIB,
    QWEN3_4B,
    QWEN25_1B5,
    QWEN25_7B,
    ROOT,
    FakeHardware,
    FakePackages,
    FakeRay,
    write_model,
)

SECTION = "## Recipes for smaller budgets"
MODELS = {"qwen3_4b": QWEN3_4B, "qwen25_1b5": QWEN25_1B5, "qwen25_7b": QWEN25_7B}
# recipe file: (model, GPU GiB it claims, a card too small for it)
RECIPES = {
    "config_qwen3_4b_8gpu.yaml": ("qwen3_4b", 80, 16),
    "config_qwen3_4b_8gpu.yaml rollout.max_concurrent_rollouts=6": ("qwen3_4b", 40, 16),
    "config_qwen3_4b_2gpu.yaml": ("qwen3_4b", 80, 48),
    "config_qwen25_1b5_1gpu.yaml": ("qwen25_1b5", 40, 16),
    "config_qwen25_7b_lora_2gpu.yaml": ("qwen25_7b", 40, 16),
    "config_qwen25_7b_lora_8gpu.yaml": ("qwen25_7b", 24, 12),
    "config_qwen3_4b_lora_2gpu.yaml": ("qwen3_4b", 40, 16),
}
LORA = sorted(k for k in RECIPES if "_lora_" in k)


def section() -> str:
    text = (ROOT / "docs" / "gpu-recipes.md").read_text()
    return text.split(SECTION, 1)[1].split("\n## ", 1)[0]


def preflight_commands() -> dict[str, tuple[list[str], float]]:
    """The section's preflight commands by recipe (config and overrides), minus
    ``--gpu-memory-gib``, which the tests vary."""
    found = {}
    for line in re.findall(
        r"^uv run python examples/preflight\.py .*$", section(), re.M
    ):
        argv = shlex.split(line.split("#", 1)[0])[4:]
        at = argv.index("--gpu-memory-gib")
        gib = argv[at + 1]
        del argv[at : at + 2]
        name = argv[argv.index("--config") + 1]
        overrides = [a for a in argv if "=" in a and not a.startswith("-")]
        found[" ".join([name, *overrides])] = (argv, float(gib))
    return found


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, str]:
    """Each model's folder with its published config.json, by name."""
    return {
        name: str(write_model(tmp_path_factory.mktemp(name), cfg))
        for name, cfg in MODELS.items()
    }


def model_of(name: str, models: dict[str, str]) -> str:
    return models[name]


def preflight_run(argv: list[str], gib: float, model: str) -> Run:
    """The run examples/preflight.py builds from ``argv`` (its own flags and the
    config's), with ``actor.path`` at the fixture model and no GPU visible."""
    argv = [str(ROOT / a) if a.endswith(".yaml") else a for a in argv]
    argv = [*argv, "--gpu-memory-gib", str(gib), f"actor.path={model}"]
    options, rest = preflight.parse(argv)
    config, kind = preflight.load(rest, preflight.product_loaders())
    return Run(
        config,
        kind,
        options,
        hardware=FakeHardware(),
        packages=FakePackages({"sglang": "0.5.10.post1"}),
        ray=FakeRay(error="no cluster"),
    )


def rows(run: Run) -> dict[str, Verdict]:
    return {
        c.label: c.verdict for c in run_checks(run) if c.family in ("memory", "time")
    }


def test_the_docs_give_one_preflight_command_per_recipe():
    assert set(preflight_commands()) == set(RECIPES)
    files = {p.name for p in ROOT.glob("config_qwen*.yaml")}
    assert files == {key.split()[0] for key in RECIPES}
    for name in files:
        assert f"python3 examples/train.py --config {name}" in section()


@pytest.mark.parametrize("key", sorted(RECIPES))
def test_every_memory_and_time_row_is_ok_on_the_claimed_gpu(key, models):
    argv, gib = preflight_commands()[key]
    shape, claimed, _ = RECIPES[key]
    assert gib == claimed
    found = rows(preflight_run(argv, gib, model_of(shape, models)))
    assert len(found) == 4 and set(found.values()) == {Verdict.OK}, found


@pytest.mark.parametrize("key", sorted(RECIPES))
def test_a_card_too_small_fails(key, models):
    argv, _ = preflight_commands()[key]
    shape, _, small = RECIPES[key]
    found = rows(preflight_run(argv, small, model_of(shape, models)))
    assert Verdict.FAIL in found.values(), found


@pytest.mark.parametrize(
    "key",
    [
        "config_qwen3_4b_8gpu.yaml",
        "config_qwen25_1b5_1gpu.yaml",
        "config_qwen25_7b_lora_2gpu.yaml",
        "config_qwen3_4b_lora_2gpu.yaml",
    ],
)
def test_on_24_gb_both_sides_warn(key, models):
    """The actor's state fits, its activations and the planned turns do not (a
    24 GB pair is too small for the LoRA pairs too, docs/gpu-lora.md); a LoRA actor
    on one GPU does not even load: rank 0 holds the whole model twice."""
    argv, _ = preflight_commands()[key]
    found = rows(preflight_run(argv, 24, model_of(RECIPES[key][0], models)))
    actor = Verdict.FAIL if "lora" in key else Verdict.WARN
    assert found["memory: FSDP actor per GPU"] is actor
    assert found["memory: SGLang KV cache per server"] is Verdict.WARN


@pytest.mark.parametrize("key", sorted(RECIPES))
def test_the_docs_table_gives_the_preflights_numbers(key, models):
    argv, gib = preflight_commands()[key]
    shape = RECIPES[key][0]
    run = preflight_run(argv, gib, model_of(shape, models))
    shape_ = run.model[0]
    dp = max(1, run.layout.actor_gpus)
    actor = actor_memory(shape_, run.config, dp, run.actor_offloads)
    sglang = server_memory(run, shape_, run.gpu_memory_bytes[0])
    step = step_estimate(run)
    lines = section().splitlines()
    row = next(r for r in lines if r.startswith("|") and f"`{key}`" in r)
    cells = [c.strip() for c in row.split("|")]
    assert f"{(actor.state + actor.activations) / GIB:.0f} GiB" in cells[3], cells
    assert f"{sglang.kv_tokens / 1e3:.0f}K" in cells[4], cells
    assert f"{sglang.planned_turns}/{sglang.turns_held}" in cells[5], cells
    assert f"~{round(step.seconds, -2):,.0f}" in cells[6], cells


@pytest.mark.skipif(torch.cuda.is_available(), reason="a visible GPU sets the size")
def test_the_docs_command_prints_the_estimate_and_ok_rows(models):
    """The 8-GPU recipe's command verbatim (with the fixture model's folder)."""
    argv, gib = preflight_commands()["config_qwen3_4b_8gpu.yaml"]
    cmd = ["uv", "run", "python", "examples/preflight.py", *argv]
    cmd += ["--gpu-memory-gib", f"{gib:g}", f"actor.path={models['qwen3_4b']}"]
    env = {**os.environ, "COLUMNS": "100"}
    res = subprocess.run(
        cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    assert "\nstep estimate: ~4," in "\n" + res.stdout, res.stdout + res.stderr
    verdicts = {}
    for line in res.stdout.split("-+-", 1)[1].split("\n\n", 1)[0].splitlines()[1:]:
        cells = [c.strip() for c in line.split(" | ")]
        if cells[0]:
            verdicts[cells[0]] = cells[-1]
    for label in (
        "memory: FSDP actor per GPU",
        "memory: SGLang KV cache per server",
        "time: rollout.request_timeout",
        "time: rollout.setup_timeout",
    ):
        assert verdicts[label] == "ok", res.stdout

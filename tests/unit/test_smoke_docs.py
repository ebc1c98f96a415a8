"""docs/smoke.md: its projections are what the preflight prints for its
commands, run as written (with the model's published config.json where the
docs say it is cached), from the measured-rates files it names, whose numbers
are the H100 session's (docs/gpu-measured.md); its smoke commands are the quick
start's and the ones tests/e2e/test_smoke.py runs."""

from __future__ import annotations

import json
import re
import shlex

import pytest
import torch

from examples import preflight
from tests.unit.preflight_fakes import QWEN25_1B5, QWEN25_7B, ROOT, write_model

PAGE = ROOT / "docs" / "smoke.md"
MODELS = {
    "config.yaml": ("Qwen2.5-7B-Instruct", QWEN25_7B),
    "config_qwen25_1b5_1gpu.yaml": ("Qwen2.5-1.5B-Instruct", QWEN25_1B5),
}


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(), re.S)


def projections() -> list[tuple[str, str]]:
    """Each ``--measured`` command and the text block after it."""
    text = PAGE.read_text()
    found = re.findall(
        r"```bash\n(uv run python examples/preflight\.py [^\n]*--measured [^\n]*)\n```"
        r"\s*```text\n(.*?)```",
        text,
        re.S,
    )
    return [(cmd, out) for cmd, out in found]


def test_the_docs_show_config_yaml_and_a_small_gpu_recipe():
    configs = [
        shlex.split(cmd)[shlex.split(cmd).index("--config") + 1]
        for cmd, _ in projections()
    ]
    assert configs == ["config.yaml", "config_qwen25_1b5_1gpu.yaml"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a visible GPU sets the size")
@pytest.mark.parametrize("index", [0, 1])
def test_each_projection_is_what_its_command_prints(
    index, tmp_path, capsys, monkeypatch
):
    cmd, shown = projections()[index]
    args = shlex.split(cmd)[4:]
    name, shape = MODELS[args[args.index("--config") + 1]]
    model = write_model(tmp_path / name, shape)  # the model's config.json, cached
    monkeypatch.chdir(ROOT)
    preflight.main([*args, f"actor.path={model}"])
    printed = capsys.readouterr().out
    for line in shown.strip().splitlines():
        assert line in printed.splitlines(), f"{line}\n---\n{printed}"


def test_the_measured_files_hold_the_h100_sessions_numbers():
    measured = (ROOT / "docs" / "gpu-measured.md").read_text()
    for name in ("h100-qwen25-1b5.json", "h100-tflops.json"):
        data = json.loads((ROOT / "docs" / "measured" / name).read_text())
        assert "docs/gpu-measured.md" in data["source"]
        rates = data["rates"]
        assert (
            rates["device"] == "NVIDIA H100 80GB HBM3" and rates["at"] == "2026-11-26"
        )
        for key in ("actor_train_tokens_per_s", "actor_logp_tokens_per_s"):
            if key in rates:
                assert f"{rates[key]:,} tokens/s" in measured, key
        assert f"| {rates['train_tflops']} |" in measured


def test_the_smoke_commands_are_the_quick_starts_and_cis():
    gpu, cpu = blocks("bash")[0].strip().splitlines()
    quick = (ROOT / "docs" / "gpu.md").read_text()
    assert f"```bash\n{gpu}\n```" in quick and f"```bash\n{cpu}\n```" in quick
    e2e = (ROOT / "tests" / "e2e" / "test_smoke.py").read_text()
    assert "docs/smoke.md" in e2e

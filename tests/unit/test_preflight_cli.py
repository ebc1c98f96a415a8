"""The preflight as docs/preflight.md shows it: its commands run verbatim (exit 1 for
config.yaml on a CPU machine, naming the GPU, SGLang and FlashAttention items
with their reasons; exit 0 for config_cpu.yaml through the stand-in's preflight
entry), and its sample table lists the rows the command prints."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import torch

from memagent_workflow.preflight.verdict import fail, not_applicable, ok, render, warn

ROOT = Path(__file__).resolve().parents[2]
MARKER = "**Before the first GPU hour, run the preflight.**"


def section() -> str:
    return (ROOT / "docs" / "preflight.md").read_text().split(MARKER, 1)[1]


def commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", section(), re.S).group(1)
    return [ln.split("#", 1)[0].strip() for ln in block.splitlines() if ln.strip()]


def sample() -> str:
    return re.search(r"```text\n(.*?)```", section(), re.S).group(1)


def labels(table: str) -> list[str]:
    """The first column of the table's rows (wrapped labels kept as printed)."""
    rows = table.split("-+-", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    return [r.split(" | ", 1)[0].strip() for r in rows if r.split(" | ", 1)[0].strip()]


@pytest.fixture(scope="module")
def runs() -> dict[str, subprocess.CompletedProcess]:
    env = {**os.environ, "COLUMNS": "100"}
    out = {}
    for cmd in commands():
        out[cmd] = subprocess.run(
            shlex.split(cmd),
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    return out


def test_docs_show_the_two_done_when_commands():
    assert commands() == [
        "uv run python examples/preflight.py --config config.yaml",
        "uv run python -m standin.preflight --config config_cpu.yaml",
    ]


@pytest.mark.skipif(torch.cuda.is_available(), reason="the verdicts of a CPU machine")
def test_config_yaml_on_cpu_fails_naming_gpu_sglang_flash_attention(runs):
    res = runs["uv run python examples/preflight.py --config config.yaml"]
    assert res.returncode == 1, res.stdout + res.stderr
    table = res.stdout
    for label, reason in [
        ("packages: sglang", "AReaL refuses to build SGLang's arguments"),
        ("packages: FlashAttention (actor.attn_impl)", "flash_attn"),
        ("hardware: GPUs", "run on the GPU node"),
    ]:
        assert (
            f"FAIL {label}: " in table and reason in table.split(f"FAIL {label}: ")[1]
        )
        assert label in table.rsplit("blocking item(s): ", 1)[1]


def test_config_cpu_yaml_passes(runs):
    res = runs["uv run python -m standin.preflight --config config_cpu.yaml"]
    assert res.returncode == 0, res.stdout + res.stderr
    assert "preflight: no blocking item" in res.stdout
    assert " FAIL\n" not in res.stdout


def test_the_docs_sample_has_the_rows_the_command_prints(runs):
    res = runs["uv run python examples/preflight.py --config config.yaml"]
    assert labels(sample()) == labels(res.stdout)
    assert len(labels(sample())) >= 17


def test_render_lists_advice_and_blocking_items():
    checks = [
        ok("a", "one", "x", "y"),
        warn("a", "two", "x", "y", "look"),
        fail("b", "three", "x", "y", "fix it"),
        not_applicable("b", "four", "why"),
    ]
    text = render(checks, width=100)
    assert "WARN a: two: look" in text and "FAIL b: three: fix it" in text
    assert text.splitlines()[-1] == "preflight: 1 blocking item(s): b: three"
    assert render(checks[:2], width=100).splitlines()[-1] == (
        "preflight: no blocking item (1 warning(s))"
    )

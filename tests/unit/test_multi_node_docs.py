"""docs/multi-node.md's commands: each config and override is one its entry script loads,
and the Slurm command is the one whose job scripts are tested."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.unit.preflight_fakes import load
from tests.unit.test_slurm_scripts import PAPER_SCALE

DOC = Path(__file__).resolve().parents[2] / "docs" / "multi-node.md"


def commands() -> list[list[str]]:
    """Every command with a ``--config`` in the page's bash blocks."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", DOC.read_text(), re.S):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            cmd = shlex.split(line.split("#", 1)[0])
            if "--config" in cmd:
                found.append(cmd)
    return found


def overrides(cmd: list[str]) -> list[str]:
    return [a for a in cmd[cmd.index("--config") + 2 :] if "=" in a]


@pytest.mark.parametrize("cmd", commands(), ids=lambda c: " ".join(c[:6]))
def test_every_command_loads_its_config(cmd):
    config = cmd[cmd.index("--config") + 1]
    cfg = load(config, *overrides(cmd))
    assert cfg.scheduler.type in ("ray", "slurm")
    nodes = 4 if "cpu" not in config else 2 if cfg.scheduler.type == "ray" else 1
    assert cfg.cluster.n_nodes == nodes


def test_the_slurm_command_is_the_tested_one():
    (slurm,) = [
        c for c in commands() if "scheduler.type=slurm" in c and "config.yaml" in c
    ]
    assert slurm[:4] == ["python3", "examples/train.py", "--config", "config.yaml"]
    assert tuple(overrides(slurm)) == PAPER_SCALE

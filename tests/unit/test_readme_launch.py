"""The CPU launch commands of docs/gpu-launch.md are the ones the e2e tests run, and each GPU
launch style there has its CPU twin (same scheduler, other config)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.e2e.launch_runs import EVAL_LAUNCH, LAUNCHES
from tests.e2e.ray_cluster import doc_command

ROOT = Path(__file__).resolve().parents[2]


def commands_after(marker: str) -> list[list[str]]:
    """The commands of the first bash block after ``marker`` (comments dropped)."""
    text = (ROOT / "docs" / "gpu-launch.md").read_text().split(marker, 1)[1]
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    joined = re.sub(r"\\\n\s*", " ", block)
    lines = [line.split("#", 1)[0].strip() for line in joined.splitlines()]
    return [shlex.split(line) for line in lines if line]


def overrides(cmd: list[str]) -> tuple[str, ...]:
    return tuple(arg for arg in cmd[cmd.index("--config") + 2 :] if "=" in arg)


def scheduler(cmd: list[str]) -> str | None:
    """The command's scheduler override; None: the config's own."""
    return next((a for a in overrides(cmd) if a.startswith("scheduler.type=")), None)


CPU = commands_after("**The same launches on CPU.**")
GPU = commands_after("Launch, with AReaL 1.0.4's two launch styles")


def test_every_cpu_command_is_a_tested_launch():
    # the stand-in's entries: examples/train.py and eval.py with its classes
    train = [c for c in CPU if c[:5] == ["uv", "run", "python", "-m", "standin.train"]]
    evals = [c for c in CPU if c[:5] == ["uv", "run", "python", "-m", "standin.eval"]]
    nodes = [
        c for c in CPU if c[:5] == ["uv", "run", "python", "-m", "standin.ray_nodes"]
    ]
    assert len(train) + len(evals) + len(nodes) == len(CPU)
    # the two-node cluster the Ray line runs on, as multi-node.md starts it
    cluster = doc_command("uv run python -m standin.ray_nodes")[1:]
    assert nodes == [["uv", "run", "python", *cluster, "&"]]
    assert all(c[c.index("--config") + 1] == "config_cpu.yaml" for c in train)
    assert sorted(overrides(c) for c in train) == sorted(LAUNCHES.values())
    assert [overrides(c) for c in evals] == [EVAL_LAUNCH]
    assert evals[0][evals[0].index("--config") + 1] == "config_eval_cpu.yaml"


def test_every_gpu_launch_style_has_its_cpu_twin():
    # (the SPMD launcher's line has no scheduler: its CPU twin is scheduler.type=null)
    gpu = {scheduler(c) for c in GPU if c[:2] == ["python3", "examples/train.py"]}
    assert gpu == {"scheduler.type=local", "scheduler.type=ray"}
    assert gpu <= {scheduler(c) for c in CPU if "--config" in c}

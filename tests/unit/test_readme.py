"""The README's quick start is what CI runs."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    lines = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("pip install")]


def test_quick_start_is_two_commands_and_ci_runs_the_test_one():
    train, test = quick_start_commands()
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1].strip() == test
    assert "examples/train.py" in train and "config_cpu.yaml" in train
    assert (ROOT / "config_cpu.yaml").is_file()

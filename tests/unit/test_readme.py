"""The README's quick start is what CI runs."""

import re
from pathlib import Path

from tests.tiers import FULL_COMMAND

ROOT = Path(__file__).resolve().parents[2]


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    lines = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("pip install")]


def test_quick_start_is_two_commands_and_ci_runs_the_test_one():
    train, test = quick_start_commands()
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    # the last two commands before the second stage (the vLLM CPU smoke): the
    # README's, then the full tier it leaves out, which the README shows too
    stage2 = next(i for i, line in enumerate(ci) if line.startswith("# Stage 2"))
    assert [line for line in ci[:stage2] if line][-2:] == [test, FULL_COMMAND]
    assert f"\n{FULL_COMMAND}" in (ROOT / "README.md").read_text()
    assert train.split() == [
        "uv", "run", "python", "-m", "standin.train", "--config", "config_cpu.yaml"
    ]  # fmt: skip
    assert (ROOT / "config_cpu.yaml").is_file()


def test_the_cpu_page_shows_the_readme_commands():
    page = (ROOT / "docs" / "cpu.md").read_text()
    block = re.search(r"```bash\n(.*?)```", page, re.S).group(1)
    lines = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    assert [line for line in lines if line] == quick_start_commands()


def test_the_tensorboard_command_reads_where_the_main_job_writes():
    from standin.train import load_config

    section = (ROOT / "docs" / "cpu.md").read_text().split("## What you will see", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1).strip()
    program, logdir = re.fullmatch(r"(uvx tensorboard) --logdir (\S+)", block).groups()
    board = load_config(["--config", "config_cpu.yaml"]).stats_logger.tensorboard.path
    # <logdir>/<experiment>/<trial>; the loader makes relative paths absolute
    # against the command's directory (the repository root, where the README runs)
    assert Path(board).parent.parent == Path(logdir).absolute()
    # uvx because the lock holds no tensorboard (AReaL writes with tensorboardX).
    lock = (ROOT / "uv.lock").read_text()
    assert program == "uvx tensorboard" and '\nname = "tensorboard"\n' not in lock

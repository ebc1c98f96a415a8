"""docs/gpu.md, the GPU quick start: at most 150 lines, every page it links
there, and every command in it tested as written: each is one of the forms
below, checked against what it names (the lock, the entry script's parser and
config loader, the folders the run writes), or the CPU smoke that
tests/e2e/test_smoke.py runs. A command added to the page without a check here
fails `test_every_command_is_checked`."""

from __future__ import annotations

import getpass
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from examples import preflight, smoke
from examples.train import load_config
from memagent_workflow.preflight.packages import FLASH_IMPORTS
from memagent_workflow.smoke import plan

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "gpu.md"
FLASH_WHEEL = re.compile(
    r'uv pip install --no-deps "https://github\.com/Dao-AILab/flash-attention/releases/'
    r"download/v2\.8\.3/flash_attn-2\.8\.3\+cu12torch(\d+\.\d+)cxx11abiTRUE-"
    r'cp(\d)(\d+)-cp\d+-linux_x86_64\.whl"'
)


def commands() -> list[str]:
    text = PAGE.read_text()
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        out += [ln.split("  #", 1)[0].strip() for ln in joined.splitlines()]
    return [c for c in out if c]


def argv(cmd: str) -> list[str]:
    """The command as a shell splits it, ``$USER`` expanded."""
    return [a.replace("$USER", getpass.getuser()) for a in shlex.split(cmd)]


def by_form() -> dict[str, list[str]]:
    forms = {
        "install": [], "flash": [], "data": [], "eval data": [], "preflight": [],
        "measured": [], "smoke": [], "train": [], "steps": [], "tensorboard": [],
        "cpu smoke": [],
    }  # fmt: skip
    for c in commands():
        if c in ("uv sync --extra gpu", "source .venv/bin/activate"):
            forms["install"].append(c)
        elif FLASH_WHEEL.fullmatch(c) or c.startswith("python3 -c "):
            forms["flash"].append(c)
        elif c.startswith("uv run python examples/prepare_data.py "):
            forms["data"].append(c)
        elif c.startswith("uv run python examples/prepare_eval_data.py "):
            forms["eval data"].append(c)
        elif c.startswith("python3 examples/preflight.py ") and "--measured" in c:
            forms["measured"].append(c)
        elif c.startswith("python3 examples/preflight.py "):
            forms["preflight"].append(c)
        elif c.startswith("python3 examples/smoke.py "):
            forms["smoke"].append(c)
        elif c.startswith("python3 examples/train.py "):
            forms["train"].append(c)
        elif c.startswith("tail -f "):
            forms["steps"].append(c)
        elif c.startswith("uvx tensorboard --logdir "):
            forms["tensorboard"].append(c)
        elif c.startswith("uv run python -m standin.smoke "):
            forms["cpu smoke"].append(c)
        else:
            forms.setdefault("unchecked", []).append(c)
    return forms


def test_the_page_is_a_quick_start():
    assert len(PAGE.read_text().splitlines()) <= 150
    headings = re.findall(r"^## (\d)\. (\w+)", PAGE.read_text(), re.M)
    assert [h[1] for h in headings] == [
        "Install", "Data", "Preflight", "Smoke", "Launch", "Watch"
    ]  # fmt: skip


def test_every_linked_page_is_there():
    links = re.findall(r"\]\(([^)#\s]+)", PAGE.read_text())
    assert links
    for link in links:
        assert (PAGE.parent / link).is_file(), link


def test_every_command_is_checked():
    forms = by_form()
    assert "unchecked" not in forms, forms.get("unchecked")
    assert all(forms.values()), {k: v for k, v in forms.items() if not v}


def test_install_is_the_locked_gpu_extra_and_a_matching_flash_wheel():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'gpu = \[\n\s+"sglang==0\.5\.10\.post1"', pyproject)
    wheel, check = by_form()["flash"]
    torch_minor, major, minor = FLASH_WHEEL.fullmatch(wheel).groups()
    lock = (ROOT / "uv.lock").read_text()
    torch_version = re.search(r'name = "torch"\nversion = "(\d+\.\d+)', lock)[1]
    assert torch_minor == torch_version
    assert (int(major), int(minor)) == sys.version_info[:2]  # the environment's
    names = FLASH_IMPORTS["flash_attention_2"]["flash_attn"]
    assert shlex.split(check) == [
        "python3", "-c", f"from flash_attn import {', '.join(names)}"
    ]  # fmt: skip


def test_the_data_commands_write_what_the_configs_read():
    from examples import prepare_data, prepare_eval_data

    gpu = load_config(["--config", str(ROOT / "config.yaml")])
    outputs = []
    for cmd in by_form()["data"]:
        args = prepare_data._parser().parse_args(shlex.split(cmd)[4:])
        outputs.append(str(ROOT / args.output))
    assert outputs == [gpu.train_dataset.path, gpu.valid_dataset.path]
    (cmd,) = by_form()["eval data"]
    args = prepare_eval_data._parser().parse_args(shlex.split(cmd)[4:])
    from examples.eval import load_config as load_eval

    evals = load_eval(["--config", str(ROOT / "config_eval.yaml")])
    assert args.download and str(ROOT / args.data_root) == evals.eval.data_root


def launch(cmd: str) -> list[str]:
    """The config arguments of a launch line (the config at the root)."""
    args = shlex.split(cmd)
    at = args.index("--config")
    return ["--config", str(ROOT / args[at + 1]), *args[at + 2 :]]


@pytest.fixture(scope="module")
def config():
    (cmd,) = by_form()["train"]
    return load_config(launch(cmd))


def test_preflight_smoke_and_launch_are_one_launch(config):
    (pre,) = by_form()["preflight"]
    (run,) = by_form()["smoke"]
    (train,) = by_form()["train"]
    options, rest = preflight.parse(launch(pre))
    assert rest == launch(train) and options.measured is None
    args, rest = smoke.parse(launch(run))
    assert rest == launch(train) and args.child is None
    assert config.scheduler.type == "local"


def test_the_measured_file_is_the_one_the_smoke_writes(config, monkeypatch):
    (cmd,) = by_form()["measured"]
    monkeypatch.setattr(os, "makedirs", lambda *a, **k: None)  # names, no folders
    path = argv(cmd)[argv(cmd).index("--measured") + 1]
    assert Path(path) == plan.smoke_dir(config) / "smoke.json"
    assert argv(cmd)[: argv(cmd).index("--measured")] == shlex.split(
        by_form()["preflight"][0]
    )


def test_watch_reads_the_runs_own_files(config, monkeypatch):
    from areal.utils.stats_logger import StatsLogger

    monkeypatch.setattr(os, "makedirs", lambda *a, **k: None)
    (tail,) = by_form()["steps"]
    steps = argv(tail)[2]
    assert (
        Path(steps)
        == Path(StatsLogger.get_log_path(config.stats_logger)) / "steps.jsonl"
    )
    (board,) = by_form()["tensorboard"]
    logdir = Path(argv(board)[3])
    assert Path(config.stats_logger.tensorboard.path).is_relative_to(logdir)


def test_the_cpu_smoke_is_the_one_ci_runs():
    (cmd,) = by_form()["cpu smoke"]
    assert cmd in (ROOT / "docs" / "smoke.md").read_text()

"""docs/gpu.md, the GPU path from a fresh node: every page it links there, and
every command in it tested as written: each is one of the forms below, checked
against what it names (the lock, the entry script's parser and config loader,
the folders the run writes, the checkpoint link training writes), or the CPU
smoke that tests/e2e/test_smoke.py runs. A command added to the page without a
check here fails `test_every_command_is_checked`. The released model's commands
(its eval and service under the paper preset) are checked in
tests/unit/test_released_model_docs.py."""

from __future__ import annotations

import getpass
import os
import re
import shlex
import sys
from pathlib import Path

import pytest
import torch

from examples import preflight, smoke
from examples.train import load_config
from memagent_workflow.preflight.packages import FLASH_IMPORTS
from memagent_workflow.smoke import plan

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "gpu.md"
RELEASED = "BytedTsinghua-SIA/RL-MemoryAgent-14B"  # the original's released MemAgent
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
        "install": [], "flash": [], "model": [], "data": [], "eval source": [],
        "eval data": [], "released eval": [], "released serve": [], "preflight": [],
        "measured": [], "smoke": [], "train": [], "steps": [], "tensorboard": [],
        "checkpoint": [], "eval": [], "serve": [], "cpu smoke": [], "tree preflight": [],
    }  # fmt: skip
    for c in commands():
        if c in ("uv sync --extra gpu", "source .venv/bin/activate"):
            forms["install"].append(c)
        elif c.startswith("hf download "):
            forms["model"].append(c)
        elif c.startswith("wget "):
            forms["eval source"].append(c)
        elif c.startswith(("python3 examples/eval.py ", "python3 examples/serve.py ")):
            released = f"actor.path={RELEASED}" in shlex.split(c)
            kind = "eval" if "/eval.py" in c else "serve"
            forms[f"released {kind}" if released else kind].append(c)
        elif c.startswith("CKPT="):
            forms["checkpoint"].append(c)
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
        elif c.startswith("uv run python examples/preflight.py ") and (
            "actor.enable_tree_training=true" in c
        ):  # run as written by test_docs_numbers' tree test
            forms["tree preflight"].append(c)
        else:
            forms.setdefault("unchecked", []).append(c)
    return forms


def test_the_page_goes_from_a_fresh_node_to_training_in_order():
    headings = re.findall(r"^## (\d)\. (\w+)", PAGE.read_text(), re.M)
    assert [int(h[0]) for h in headings] == list(range(1, 10))
    assert [h[1] for h in headings] == [
        "Install", "Models", "Data", "The", "Preflight", "Smoke", "Launch", "Watch",
        "Evaluate",
    ]  # fmt: skip
    # its first lines say what has run on a GPU, and what config.yaml costs
    head = PAGE.read_text().split("\n## ", 1)[0]
    assert "What has run on a GPU, and what has not" in head
    assert "What `config.yaml` costs, per the preflight" in head


def test_python_is_pinned_to_the_flash_wheels_python():
    pinned = (ROOT / ".python-version").read_text().strip()
    wheel = by_form()["flash"][0]
    _, major, minor = FLASH_WHEEL.fullmatch(wheel).groups()
    assert pinned == f"{major}.{minor}"
    pyproject = (ROOT / "pyproject.toml").read_text()
    low, high = re.search(
        r'requires-python = ">=(3\.\d+),<(3\.\d+)"', pyproject
    ).groups()
    assert int(low[2:]) <= int(minor) < int(high[2:])


def test_the_models_downloaded_are_the_ones_the_commands_read(config):
    ids = [shlex.split(c)[2] for c in by_form()["model"]]
    assert ids == [config.actor.path, RELEASED]
    assert '\nname = "huggingface-hub"\n' in (ROOT / "uv.lock").read_text()  # `hf`


def test_the_eval_source_is_fetched_under_the_name_the_data_command_reads():
    from examples import prepare_eval_data

    (fetch,) = by_form()["eval source"]
    url = shlex.split(fetch)[1]
    (cmd,) = by_form()["eval data"]
    args = prepare_eval_data._parser().parse_args(shlex.split(cmd)[4:])
    assert url.rsplit("/", 1)[1] == str(args.source) == "hotpot_dev_distractor_v1.json"


def test_the_checkpoint_is_the_latest_link_training_writes(config, monkeypatch):
    from memagent_workflow.trainer.latest import latest_link

    monkeypatch.setattr(os, "makedirs", lambda *a, **k: None)
    (line,) = by_form()["checkpoint"]
    path = argv(line.replace("CKPT=", "", 1))[0]
    saver = config.saver
    link = latest_link(saver.experiment_name, saver.trial_name, saver.fileroot)
    assert Path(path) == link
    for kind in ("eval", "serve"):
        (cmd,) = by_form()[kind]
        assert "actor.path=$CKPT" in shlex.split(cmd), cmd


def test_the_checkpoints_eval_and_service_load_as_the_released_models_do():
    from tests.unit.test_released_model_docs import load_command

    (released,) = [c for c in by_form()["released eval"] if "eval.lengths" not in c]
    for kind in ("eval", "serve"):
        (cmd,) = by_form()[kind]
        cfg = load_command(cmd.replace("$CKPT", "/some/checkpoint"))
        assert cfg.actor.path == "/some/checkpoint" and cfg.eval.preset is None
    ours, theirs = (shlex.split(c) for c in (by_form()["eval"][0], released))
    keep = lambda args: [a for a in args if not a.startswith(("actor.path=", "eval."))]  # noqa: E731
    assert keep(ours) == keep(theirs)


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


@pytest.mark.skipif(torch.cuda.is_available(), reason="here: the CPU's verdicts")
def test_the_preflight_command_runs_here_as_written(capsys, monkeypatch, tmp_path):
    """Step 5's command, verbatim, on this CPU machine (offline), after step 2:
    the model's config.json in the hub cache (its published numbers, written
    where `hf download` puts it). The run's estimate, the memory rows estimated,
    then the table failing on what a CPU lacks."""
    import huggingface_hub.constants

    from tests.unit.preflight_fakes import QWEN25_7B, write_model

    repo = tmp_path / "models--Qwen--Qwen2.5-7B-Instruct"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    write_model(repo / "snapshots" / ("0" * 40), QWEN25_7B)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    (cmd,) = by_form()["preflight"]
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code = preflight.main(shlex.split(cmd)[2:])
    out = capsys.readouterr().out
    assert code == 1  # blocking items: no GPU here
    assert re.search(r"^run estimate: 400 steps \(total_train_steps\)", out, re.M)
    assert re.search(r"^hardware: GPUs +\| 0 visible.*\| FAIL$", out, re.M), out
    assert "memory: FSDP actor per GPU" in out and "7.62B params" in out
    assert "run where the model is cached" not in out


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

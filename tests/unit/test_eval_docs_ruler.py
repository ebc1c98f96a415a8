"""docs/eval-ruler.md's RULER section as written: the data command for the paper's OOD
table runs verbatim (the real Qwen2.5 vocabulary under its hub name, offline; our
own essay and SQuAD files under the names shown; at 8K tokens, one sample per
file, through appended test-only overrides), and every GPU eval row has its CPU
twin with the same tasks and mode (the CPU rows run in tests/e2e/test_eval_ruler.py).

``uv run python`` is replaced by this interpreter (the command runs in a scratch
folder, outside the project uv would look for)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memagent_workflow.eval.ruler.tasks import PAPER_TASKS, TASKS
from standin.ruler_haystacks import prose, squad
from tests.qwen_vocab import qwen25_tokenizer

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## RULER tasks and baselines"


def blocks() -> list[list[list[str]]]:
    """The section's bash blocks, as commands (continuations joined, comments dropped)."""
    text = (ROOT / "docs" / "eval-ruler.md").read_text().split(SECTION, 1)[1]
    text = text.split("\n## ", 1)[0]
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        lines = [line.split("#", 1)[0].strip() for line in joined.splitlines()]
        out.append([shlex.split(line) for line in lines if line])
    return out


def eval_keys(cmd: list[str]) -> list[str]:
    return sorted(a for a in cmd if a.startswith(("eval.tasks=", "eval.mode=")))


def test_every_gpu_row_has_its_cpu_twin():
    gpu, cpu = blocks()
    gpu_evals = [c for c in gpu if "examples/eval.py" in c]
    assert len(gpu_evals) == 3 and all("config_eval.yaml" in c for c in gpu_evals)
    assert [eval_keys(c) for c in gpu_evals] == [eval_keys(c) for c in cpu]
    assert all(
        c[:6] == ["uv", "run", "python", "-m", "standin.eval", "--config"] for c in cpu
    )
    assert {c[6] for c in cpu} == {"config_eval_cpu.yaml"}
    modes = [next((a for a in c if a.startswith("eval.mode=")), "") for c in gpu_evals]
    assert modes == ["", "eval.mode=full_context", "eval.mode=no_context"]


def fake_hub_cache(home: Path, repo: str) -> None:
    """The Qwen2.5 tokenizer in a hub cache under ``repo``, as a download leaves it."""
    commit = "0" * 40
    model = home / "hub" / f"models--{repo.replace('/', '--')}"
    snapshot = model / "snapshots" / commit
    qwen25_tokenizer().save_pretrained(snapshot)
    config = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"]}
    (snapshot / "config.json").write_text(json.dumps(config))
    (model / "refs").mkdir(parents=True)
    (model / "refs" / "main").write_text(commit)


def test_the_ood_table_data_command_runs_as_written(tmp_path):
    (prepare,) = [c for c in blocks()[0] if "examples/prepare_eval_data.py" in c]
    assert prepare[:3] == ["uv", "run", "python"]
    tokenizer = prepare[prepare.index("--tokenizer") + 1]
    fake_hub_cache(tmp_path / "hf", tokenizer)
    work = tmp_path / "work"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples")
    for name in ("PaulGrahamEssays.json", "dev-v2.0.json"):
        assert name in prepare
    (work / "PaulGrahamEssays.json").write_text(json.dumps({"text": prose(1500)}))
    (work / "dev-v2.0.json").write_text(json.dumps(squad()))
    env = {
        **os.environ,
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
    }
    cmd = [sys.executable, *prepare[3:], "--lengths", "8192", "--samples", "1"]
    run = subprocess.run(cmd, cwd=work, env=env, capture_output=True, timeout=900)
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    out = work / prepare[prepare.index("--output") + 1]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"eval_{t}_8192.json" for t in PAPER_TASKS
    )
    tok = qwen25_tokenizer()
    for path in out.iterdir():
        (s,) = json.loads(path.read_text())
        n = len(tok.encode(s["question"], add_special_tokens=False))
        n += len(tok.encode(s["context"], add_special_tokens=False))
        assert s["length"] == n + TASKS[s["task"]].tokens_to_generate
        assert 0.98 * 8192 <= s["length"] <= 8192


def parse_prepare(args: list[str], tmp_path: Path) -> None:
    from examples.prepare_eval_data import _parser

    _parser().parse_args(args)


def load_eval(loader: Callable[[list[str]], Any]) -> Callable[[list[str], Path], None]:
    """An eval entry's config loader, run on a command's arguments (its config
    file in this repository, its outputs under ``tmp_path``)."""

    def load(args: list[str], tmp_path: Path) -> None:
        i = args.index("--config") + 1
        args = [*args[:i], str(ROOT / args[i]), *args[i + 1 :]]
        loader([*args, f"cluster.fileroot={tmp_path}"])

    return load


def tools() -> dict[str, Callable[[list[str], Path], None]]:
    """What parses the arguments of each tool the section runs, by the argument
    that names the tool."""
    from examples import eval as product_eval
    from standin import eval as standin_eval

    return {
        "examples/prepare_eval_data.py": parse_prepare,
        "examples/eval.py": load_eval(product_eval.load_config),
        "standin.eval": load_eval(standin_eval.load_config),
    }


@pytest.mark.parametrize("block", [0, 1])
def test_commands_use_only_keys_the_tools_know(block, tmp_path):
    """Every command of the block is parsed by its tool: a block with none, or
    a command of a tool the test does not know, fails."""
    commands = blocks()[block]
    assert commands, f"block {block} of {SECTION!r} holds no command"
    parsers = tools()
    for cmd in commands:
        named = [a for a in cmd if a in parsers]
        assert len(named) == 1, f"no tool the test knows runs: {shlex.join(cmd)}"
        parsers[named[0]](cmd[cmd.index(named[0]) + 1 :], tmp_path)

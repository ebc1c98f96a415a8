"""docs/gpu.md's first GPU check: the original's released RL-MemoryAgent-14B,
evaluated (examples/eval.py) and served (examples/serve.py) as the page writes
each command, loads with the paper preset's protocol (eval.preset=paper: its
answer form, prompt encoding, empty memory, templates and sampling), and the
page's table is the paper's row for that model."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from memagent_workflow.eval.anchors import anchors_for_model
from memagent_workflow.eval.checks import check_preset
from memagent_workflow.eval.config import PAPER
from memagent_workflow.prompts.original import eval_spec
from tests.unit.test_gpu_quickstart import RELEASED, by_form

ROOT = Path(__file__).resolve().parents[2]


def load_command(cmd: str):
    """The config the command's entry script loads (serve.py's own flags and
    its ``serve.*`` keys handled as serve.py handles them)."""
    args = shlex.split(cmd)
    script, rest = args[1], args[2:]
    if script == "examples/eval.py":
        from examples.eval import load_config

        return load_config(["--config", str(ROOT / rest[1]), *rest[2:]])
    assert script == "examples/serve.py", script
    from examples import serve
    from memagent_workflow.infra.paths import load_entry_config
    from memagent_workflow.serve.config import MemAgentServeConfig

    _, rest = serve.parse_args(rest)
    rest[1] = str(ROOT / rest[1])
    rest = [f"++{a}" if a.startswith(f"{serve.SECTION}.") else a for a in rest]
    return load_entry_config(rest, MemAgentServeConfig, serve.__file__)


def released_commands() -> list[str]:
    forms = by_form()
    return [*forms["released eval"], *forms["released serve"]]


def test_the_page_evaluates_and_serves_the_released_model():
    forms = by_form()
    assert len(forms["released eval"]) == 2 and len(forms["released serve"]) == 1


@pytest.mark.parametrize("cmd", released_commands(), ids=["eval 7K", "eval", "serve"])
def test_each_command_loads_the_paper_presets_protocol(cmd):
    cfg = load_command(cmd)
    assert cfg.actor.path == RELEASED and cfg.eval.preset == "paper"
    m, g = cfg.memagent, cfg.gconfig
    assert m.answer_protocol == PAPER["answer_protocol"] == "answer_is"
    assert m.prompt_build == PAPER["prompt_build"]
    assert m.empty_memory == PAPER["empty_memory"]
    assert m.prompts == eval_spec(PAPER["prompts"], PAPER["answer_protocol"])
    assert (g.temperature, g.top_p, g.greedy) == (
        PAPER["temperature"], PAPER["top_p"], False
    )  # fmt: skip
    check_preset(cfg)  # the eval's own refusal of a non-paper run passes
    if "eval.lengths=[50]" not in cmd:
        assert cfg.eval.lengths == PAPER["lengths"]
        assert cfg.eval.headline == PAPER["headline"]


def test_the_two_evals_share_one_output_folder_so_the_second_resumes():
    first, full = (load_command(c) for c in by_form()["released eval"])
    assert first.eval.lengths == [50] and first.eval.output_dir == full.eval.output_dir


def test_the_table_beside_the_commands_is_the_papers_row_for_the_model():
    text = (ROOT / "docs" / "gpu.md").read_text()
    row = re.search(r"^\| RL-MemAgent-14B, paper v1 \|(.*)\|$", text, re.M).group(1)
    shown = [float(v) for v in row.split("|")]
    (v1,) = [
        a
        for a in anchors_for_model(RELEASED)
        if a.name == "RL-MemAgent-14B" and "v1" in a.source
    ]
    assert shown == [v1.values[n] for n in PAPER["lengths"]]

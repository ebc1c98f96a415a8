"""docs/gpu-recipes.md, "Tree training (opt-in)": the two launch lines as a shell
splits them turn on tree training with the section first, and choose the
micro-batch size the preflight's memory arithmetic lets the 7B actor hold."""

from __future__ import annotations

import re
import shlex

from memagent_workflow.preflight.memory_estimate import actor_memory
from memagent_workflow.preflight.model import ModelShape
from tests.unit.preflight_fakes import GIB, H100_BYTES, QWEN25_7B, ROOT, load

H200_BYTES = 141 * GIB


def tree_lines() -> list[list[str]]:
    text = (ROOT / "docs" / "gpu-recipes.md").read_text()
    text = text.split("**Tree training (opt-in).**", 1)[1].split("\n## ", 1)[0]
    return [shlex.split(b) for b in re.findall(r"```bash\n(.*?)```", text, re.S)]


def steady(cmd: list[str]) -> tuple[object, int]:
    """The config the line loads and its actor's bytes per GPU (state and
    activations) over the FSDP GPUs its backend names."""
    assert cmd[:4] == ["python3", "examples/train.py", "--config", "config.yaml"]
    cfg = load("config.yaml", *cmd[4:])
    dp = int(re.match(r"fsdp:d(\d+)", cfg.actor.backend).group(1))
    return cfg, actor_memory(ModelShape.from_config(QWEN25_7B), cfg, dp).steady


def test_two_lines_with_tree_training_and_the_section_first():
    lines = tree_lines()
    assert len(lines) == 2
    for cmd in lines:
        cfg, _ = steady(cmd)
        assert cfg.actor.enable_tree_training and cfg.actor.pad_to_maximum
        assert cfg.actor.tree_padding == "block"
        assert cfg.memagent.prompts.endswith("prompts/section_first.yaml")


def test_each_size_fits_where_the_page_puts_it():
    # the preflight warns above 95% of a GPU (memagent_workflow/preflight/memory.py)
    small, large = tree_lines()
    cfg_small, small_bytes = steady(small)
    cfg_large, large_bytes = steady(large)
    assert cfg_small.actor.mb_spec.max_tokens_per_mb == 16384
    assert cfg_large.actor.mb_spec.max_tokens_per_mb == 38016
    # 16,384 on the default layout's 4 FSDP H100s
    assert small_bytes <= 0.95 * H100_BYTES
    # 38,016 on the same 4 would not fit an H100; it fits an H200
    four = load("config.yaml", *small[4:], "actor.mb_spec.max_tokens_per_mb=38016")
    at_four = actor_memory(ModelShape.from_config(QWEN25_7B), four, 4).steady
    assert 0.95 * H100_BYTES < at_four <= 0.95 * H200_BYTES
    # 38,016 over the paper-scale layout's 16 FSDP GPUs fits an H100
    assert large_bytes <= 0.95 * H100_BYTES

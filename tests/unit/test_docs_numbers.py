"""Every figure a page quotes about `config.yaml`'s cost and capacity is the
preflight's, regenerated here in-process for the named config and model (Qwen2.5-7B-
Instruct's published config.json, no download; 8 H100s: 80 GiB assumed where no GPU
is visible; the one H100's measured TFLOP/s, docs/measured/h100-tflops.json, as
docs/gpu.md and docs/smoke.md quote it). A page that disagrees, or drops the figure,
fails here, naming the page and the sentence it should hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from examples import preflight
from memagent_workflow.preflight import Run
from memagent_workflow.preflight.memory_estimate import actor_memory, server_memory
from memagent_workflow.preflight.projection import projection
from tests.unit.preflight_fakes import GIB, QWEN25_7B, write_model

ROOT = Path(__file__).resolve().parents[2]
MEASURED = "docs/measured/h100-tflops.json"

# (page, sentence): each must appear in the page (whitespace and YAML comment
# marks folded) with the regenerated figures filled in.
QUOTES = [
    ("docs/gpu.md", "{steps} steps x ~{step_s} s = {hours} h on {gpus} GPUs = {gpu_hours} GPU-hours, about {days} days"),
    ("docs/smoke.md", "x ~{step_s} s = {hours} h on {gpus} GPU(s) = {gpu_hours} GPU-hours"),
    ("docs/smoke.md", "4 actor GPUs at the 1.5B's rate take ~{step_h} h a step"),
    ("docs/smoke.md", "a step's {tokens_int}M tokens"),
    ("docs/performance.md", "a step holds {tokens_m}M tokens (the preflight's step estimate)"),
    ("docs/preflight.md", "keeps {pool} GiB (0.8 of 80) - {weights} GiB of weights = ~{kv_k}K KV tokens, {turns} turns of {turn} tokens"),
    ("docs/preflight.md", "activations ~{activations} GiB"),
    ("docs/gpu-recipes.md", "{weights} GiB of bf16 weights leave {kv_gib} GiB of KV cache"),
    ("docs/gpu-recipes.md", "~{kv_k}K tokens, ~{turns} turns of ~7K tokens at once per server"),
    ("config.yaml", "holds ~{kv_k}K tokens, ~{turns} turns of ~7K tokens at once (the preflight's SGLang row)"),
]  # fmt: skip


def folded(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".yaml":
        text = re.sub(r"\n\s*#", " ", text)
    return " ".join(text.split())


@pytest.fixture(scope="module")
def figures(tmp_path_factory) -> dict[str, str]:
    """config.yaml's figures as the preflight computes them for its command
    ``--config config.yaml scheduler.type=local --measured MEASURED``."""
    model = write_model(tmp_path_factory.mktemp("m") / "Qwen2.5-7B-Instruct", QWEN25_7B)
    argv = ["--config", str(ROOT / "config.yaml"), "scheduler.type=local"]
    options, rest = preflight.parse([*argv, "--measured", str(ROOT / MEASURED)])
    config, kind = preflight.load(
        [*rest, f"actor.path={model}"], preflight.product_loaders()
    )
    run = Run(config, kind, options)
    found = projection(run)
    step, shape = found.step, run.model[0]
    server = server_memory(run, shape, run.gpu_memory_bytes[0])
    tokens = float(re.search(r"([\d.]+)M tokens on", step.actor_how).group(1))
    actor = actor_memory(shape, config, dp=run.layout.actor_gpus)
    return {
        "steps": f"{found.steps}",
        "step_s": f"{step.seconds:,.0f}",
        "hours": f"{found.hours:,.0f}",
        "gpus": f"{found.gpus}",
        "gpu_hours": f"{found.gpu_hours:,.0f}",
        "days": f"{found.hours / 24:.0f}",
        "step_h": f"{step.seconds / 3600:.0f}",
        "tokens_m": f"{tokens:.1f}",
        "tokens_int": f"{tokens:.0f}",
        "pool": f"{server.pool / GIB:.1f}",
        "weights": f"{server.weights / GIB:.1f}",
        "kv_gib": f"{(server.pool - server.weights) / GIB:.1f}",
        "kv_k": f"{server.kv_tokens / 1e3:.0f}",
        "turns": f"{server.turns_held}",
        "turn": f"{server.turn_tokens}",
        "activations": f"{actor.activations / GIB:.1f}",
    }


@pytest.mark.skipif(torch.cuda.is_available(), reason="a visible GPU sets the size")
def test_the_figures_are_the_preflights_own_output(figures, capsys, tmp_path):
    """The same run through the preflight's command prints these figures."""
    model = write_model(tmp_path / "Qwen2.5-7B-Instruct", QWEN25_7B)
    code = preflight.main(
        ["--config", str(ROOT / "config.yaml"), "scheduler.type=local",
         "--measured", str(ROOT / MEASURED), f"actor.path={model}"]
    )  # fmt: skip
    printed = " ".join(capsys.readouterr().out.split())
    assert code in (0, 1)
    f = figures
    assert (
        f"{f['steps']} steps (total_train_steps) x ~{f['step_s']} s = {f['hours']} h "
        f"on {f['gpus']} GPU(s) = {f['gpu_hours']} GPU-hours"
    ) in printed
    assert f"{f['tokens_m']}M tokens on 4 GPU(s)" in printed


@pytest.mark.skipif(torch.cuda.is_available(), reason="a visible GPU sets the size")
@pytest.mark.parametrize(
    "page, sentence", QUOTES, ids=[f"{p}:{i}" for i, (p, _) in enumerate(QUOTES)]
)
def test_each_page_quotes_the_preflights_figures(figures, page, sentence):
    want = sentence.format(**figures)
    assert want in folded(ROOT / page), f"{page} should say: {want}"


def tree_section() -> str:
    text = (ROOT / "docs/gpu.md").read_text(encoding="utf-8")
    return text[text.index("## Tree training (opt-in)") :].split("\n## ", 1)[0]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a visible GPU sets the size")
def test_the_tree_override_halves_config_yamls_run_estimate(capsys, tmp_path):
    """docs/gpu.md's preflight line with the tree overrides, run as written (the
    model's config.json written in place of the cache), prints a run estimate at
    most half the packed one it prints beside it, and the page quotes both lines."""
    section = tree_section()
    prefix = "uv run python examples/preflight.py "
    (line,) = [ln for ln in section.splitlines() if ln.startswith(prefix)]
    argv = line[len(prefix) :].split()
    assert "actor.enable_tree_training=true" in argv, line
    model = write_model(tmp_path / "Qwen2.5-7B-Instruct", QWEN25_7B)
    code = preflight.main([*argv, f"actor.path={model}"])
    out = capsys.readouterr().out
    assert code in (0, 1)
    tree = re.search(r"^run estimate: .* = ([\d,]+) GPU-hours$", out, re.M)
    packed = re.search(
        r"^  without tree training \(packed\): .* = ([\d,]+) GPU-hours$", out, re.M
    )
    assert tree and packed, out
    for printed in (tree.group(0), packed.group(0)):
        assert printed in section, f"docs/gpu.md should quote: {printed}"

    def hours(m: re.Match) -> int:
        return int(m.group(1).replace(",", ""))

    assert hours(tree) <= hours(packed) / 2, (tree.group(0), packed.group(0))

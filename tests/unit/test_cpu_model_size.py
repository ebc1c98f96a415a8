"""The CPU model's size, wherever it is stated, is the size config_cpu.yaml builds.

docs/learning.md describes the model (its "Model" bullet); README.md and the other
docs repeat the parameter count. Comments in code and configs point to the doc
instead of repeating it; this test holds every stated count to the built model.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# "49K parameters", "a 49K-parameter model", "~45K parameters"
STATED = re.compile(r"(\d+)K[- ]parameter")


def stating_files() -> list[Path]:
    """Every doc, config, prompts file and stand-in module."""
    return [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "bench").glob("*.md")),
        *sorted(ROOT.glob("*.yaml")),
        *sorted((ROOT / "prompts").glob("*.yaml")),
        *sorted((ROOT / "standin").glob("*.py")),
    ]


def built_parameters() -> int:
    """Parameters of the needle model config_cpu.yaml builds (before its warm start)."""
    from standin.cpu_job import needle_spec
    from standin.needle_model import build_tokenizer, init_model
    from standin.train import load_config

    config = load_config(
        ["--config", str(ROOT / "config_cpu.yaml"), "actor.path=not-built"]
    )
    spec = needle_spec(config)
    model = init_model(spec, build_tokenizer(spec))
    return sum(p.numel() for p in model.parameters())


def test_every_stated_size_of_the_cpu_model_is_the_built_one():
    thousands = round(built_parameters() / 1000)
    stated = {
        (path.relative_to(ROOT).as_posix(), int(k))
        for path in stating_files()
        for k in STATED.findall(path.read_text())
    }
    assert ("docs/learning.md", thousands) in stated, "the doc that describes it"
    wrong = sorted(s for s in stated if s[1] != thousands)
    assert not wrong, f"config_cpu.yaml builds {thousands}K parameters; {wrong} differ"

"""``memagent.prompts=original``: the key's pieces that need no source file:
how a template's constants are read (never run) and converted to a prompts
file's slots, the key's spellings, the variant an eval picks, and what the eval
config makes of the key (``eval.preset=paper``, a folder made absolute).

The synthetic sources and the no-network fixture are test_original_prompts.py's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memagent_workflow.prompts import PromptFileError, load_prompts
from memagent_workflow.prompts import original as op
from tests.unit.test_original_prompts import (
    by_hand,
    offline,  # noqa: F401 (an autouse fixture: it applies here too)
)

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------ extraction


def test_pasted_and_formatted_conversions_differ_only_in_braces():
    where = "synthetic"
    value = "A {prompt} \\boxed{{}} and {memory}, {chunk}\n"
    assert (
        op.as_format_template(value, True, where)
        == "A {question} \\boxed{{{{}}}} and {memory}, {chunk}\n"
    )
    assert (
        op.as_format_template(value, False, where)
        == "A {question} \\boxed{{}} and {memory}, {chunk}\n"
    )
    with pytest.raises(op.OriginalPromptsError, match="unknown slot"):
        op.as_format_template("{prompt} {context}", False, where)


def test_constants_are_read_without_running_the_source():
    src = 'import sys\nsys.exit(1)\nA = "one"\nA = "two"\nB: str = "b"\n'
    assert op.string_constants(src, ("A", "B"), "x") == {"A": "two", "B": "b"}
    with pytest.raises(op.OriginalPromptsError, match="no module-level"):
        op.string_constants("def f():\n    A = 'x'\n", ("A",), "x")
    with pytest.raises(op.OriginalPromptsError, match="not a string literal"):
        op.string_constants("A = 'x' + 'y'\n", ("A",), "x")


# ------------------------------------------------------------ spellings, choice


def test_spellings():
    c = "ab" * 20
    assert op.parse_spec("original") == op.OriginalSpec()
    assert op.parse_spec(f"original-eval-boxed@{c}:/x:y") == op.OriginalSpec(
        "eval-boxed", c, "/x:y"
    )
    assert op.parse_spec("original.yaml") is None
    assert op.parse_spec("prompts/needle.yaml") is None and op.parse_spec(None) is None
    with pytest.raises(op.OriginalPromptsError, match="neither a file nor"):
        op.parse_spec("original-eval")
    with pytest.raises(PromptFileError, match="neither a file nor"):
        load_prompts("original@abc123")


def test_a_file_named_like_the_key_is_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    by_hand(tmp_path, "train").rename(tmp_path / "original-mine.yaml")
    assert load_prompts("original-mine.yaml").source == "original-mine.yaml"


def test_eval_resolves_a_bare_original_by_answer_protocol():
    c = "cd" * 20
    assert op.eval_spec("original", "boxed") == "original-eval-boxed"
    assert op.eval_spec("original", "answer_is") == "original-eval-answer_is"
    assert op.eval_spec(f"original@{c}:/d", "boxed") == f"original-eval-boxed@{c}:/d"
    assert op.eval_spec("original-train", "boxed") == "original-train"  # explicit
    assert op.eval_spec("my.yaml", "boxed") == "my.yaml"
    assert op.eval_spec(None, "boxed") is None


# ------------------------------------------------------------ eval.preset=paper


def load_eval(tmp_path, *overrides):
    from examples.eval import load_config

    args = ["--config", str(ROOT / "config_eval.yaml"), f"cluster.fileroot={tmp_path}"]
    return load_config(args + list(overrides))


def test_the_paper_preset_uses_the_originals_eval_templates(tmp_path):
    def variant(cfg):
        return op.parse_spec(cfg.memagent.prompts).variant

    assert variant(load_eval(tmp_path, "eval.preset=paper")) == "eval-answer_is"
    mine = load_eval(tmp_path, "eval.preset=paper", "memagent.prompts=mine.yaml")
    assert mine.memagent.prompts.endswith("mine.yaml")  # the user's choice wins
    assert op.parse_spec(mine.memagent.prompts) is None
    plain = load_eval(tmp_path, "memagent.prompts=original")
    assert variant(plain) == "eval-boxed"  # a bare 'original' in an eval
    assert load_eval(tmp_path).memagent.prompts is None  # no preset: built-in


def test_the_config_loader_keeps_the_key_and_makes_its_folder_absolute(tmp_path):
    from memagent_workflow.infra.paths import resolve_paths

    cfg = load_eval(tmp_path)
    for value, want in [
        ("original", "original"),
        ("original-eval-boxed", "original-eval-boxed"),
        ("original:src", f"original:{tmp_path / 'src'}"),
        ("original-mine.yaml", str(tmp_path / "original-mine.yaml")),  # a file
    ]:
        cfg.memagent.prompts = value
        assert resolve_paths(cfg, tmp_path).memagent.prompts == want

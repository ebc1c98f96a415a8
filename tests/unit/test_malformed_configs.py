"""The malformed-input campaign: configs and their overrides.

A config file that cannot be read or parsed, a key the config class lacks, a
value of the wrong type or NaN, set in the file or by an override: each is one
``ConfigError`` naming the file, the key and the override that set it, and the
entry scripts print it without a traceback (exit 2). Loading a config AReaL
refuses writes nothing; only a config AReaL parsed (refused afterwards for
NaN) has AReaL's copy, ``config.yaml``, in the run's log folder.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from examples import train
from memagent_workflow.config import MemAgentGRPOConfig
from memagent_workflow.infra.config_loader import ConfigError, parse_config
from tests.unit.malformed import HUGE_INT, assert_names, campaign, files_in

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config.yaml"
# typed keys config.yaml sets, and values of another type for each
TYPED = {
    "memagent.chunk_tokens": "int",
    "memagent.group_size": "int",
    "total_train_epochs": "int",
    "gconfig.max_new_tokens": "int",
    "actor.optimizer.lr": "float",
    "gconfig.temperature": "float",
    "memagent.adv_std_norm": "bool",
    "actor.gradient_checkpointing": "bool",
}
WRONG = {
    "int": ["many", "1.5", "[1,2]", "{a: 1}", "true", HUGE_INT],
    "float": ["fast", "[0.1]", "{a: 1}", "nan"],
    "bool": ["maybe", "2", "[true]", "{a: 1}"],
}


def load(config: Path | str, *overrides: str) -> MemAgentGRPOConfig:
    argv = ["--config", str(config), *overrides]
    return parse_config(argv, MemAgentGRPOConfig, "examples/train.py")


@campaign("config overrides")
@given(st.sampled_from(sorted(TYPED)).flatmap(
    lambda key: st.tuples(st.just(key), st.sampled_from(WRONG[TYPED[key]]))
))  # fmt: skip
def test_an_override_of_the_wrong_type_names_file_key_and_override(
    tmp_path_factory, case
):
    key, value = case
    root = tmp_path_factory.mktemp("cfg")
    override = f"{key}={value}"
    with pytest.raises(ConfigError) as refused:
        load(CONFIG, f"cluster.fileroot={root}", override)
    message = str(refused.value)
    assert_names(message, f"config {CONFIG}", f"key '{key}'", limit=800)
    assert f"override '{override[:60]}" in message  # a huge one is cut short
    assert files_in(root) == []


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


BASE = CONFIG.read_text()
# name -> (file name, its text (None: a directory), overrides, what is named)
EDGE_CASES = {
    "a directory": ("c.yaml", None, [], ["is a directory"]),
    "no such file": ("gone.yaml", "", [], ["no such file"]),
    "not a .yaml file": ("c.yml", BASE, [], ["ends in .yaml"]),
    "not UTF-8": (
        "c.yaml",
        BASE.encode().replace(b"memagent:", b"# \xff\nmemagent:", 1),
        [],
        ["not UTF-8 text: byte 0xff"],
    ),
    "YAML cut inside a list": ("c.yaml", "a: 1\nb: [1, 2", [], ["line 2"]),
    "a key given twice": ("c.yaml", BASE + "\nmemagent: {}\n", [], ["duplicate key"]),
    "a list at the top": ("c.yaml", "- 1\n- 2\n", [], ["must be a DictConfig"]),
    "an empty file": ("c.yaml", "", [], ["key 'experiment_name'", "missing"]),
    "a key the class lacks": (
        "c.yaml",
        BASE.replace("memagent:\n", "memagent:\n  chunk_size: 5\n", 1),
        [],
        ["key 'memagent.chunk_size'", "no such key in MemAgentConfig"],
    ),
    "a value of the wrong type in the file": (
        "c.yaml",
        re.sub(r"\n  group_size:[^\n]*", "\n  group_size: [4]", BASE, count=1),
        [],
        ["key 'memagent.group_size'", "could not be converted to Integer"],
    ),
    "an override that is no assignment": (
        "config.yaml",
        BASE,
        ["memagent.chunk_tokens"],
        ["override 'memagent.chunk_tokens'"],
    ),
    "an override of a key the file lacks": (
        "config.yaml",
        BASE,
        ["memagent.wipe_memory=true"],
        ["key 'memagent.wipe_memory'", "+memagent.wipe_memory=true"],
    ),
    "NaN in an override": (
        "config.yaml",
        BASE,
        ["memagent.engine_retry_s=nan"],
        ["key 'memagent.engine_retry_s'", "=nan'", "NaN"],
    ),
    "a value the config's own check refuses": (
        "config.yaml",
        BASE,
        ["memagent.chunk_tokens=-5"],
        ["override 'memagent.chunk_tokens=-5'", "must be >= 1"],
    ),
}


@pytest.mark.parametrize("case", EDGE_CASES)
def test_an_edge_case_config_is_refused_by_file_and_key(tmp_path, case):
    name, text, overrides, named = EDGE_CASES[case]
    path = tmp_path / name
    if text is None:
        path.mkdir()
    elif name != "gone.yaml":
        write(path, text)
    with pytest.raises(ConfigError) as refused:
        load(path, *overrides)
    assert_names(str(refused.value), f"config {path}", *named)
    assert files_in(tmp_path) == ([] if text is None or name == "gone.yaml" else [name])


def test_the_train_entry_prints_the_refusal_alone_and_exits_2(tmp_path):
    path = write(tmp_path / "c.yaml", "a: 1\nb: [1, 2")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stop:
        train.main(["--config", str(path)])
    assert stop.value.code == 2
    printed = err.getvalue()
    assert (
        printed.startswith(f"error: config {path}: line ") and "\n" not in printed[:-1]
    )
    assert "(while parsing a flow sequence at line 2)" in printed


def test_nan_in_the_file_is_refused_by_key_after_areals_own_parse(tmp_path):
    # NaN from the file is seen once AReaL has parsed the config (and, as for
    # every config it parses, written its copy in the run's log folder)
    path = write(tmp_path / "c.yaml", BASE.replace("lr: 1.0e-6", "lr: .nan", 1))
    with pytest.raises(ConfigError) as refused:
        load(
            path,
            f"cluster.fileroot={tmp_path / 'root'}",
            f"cluster.name_resolve.nfs_record_root={tmp_path / 'names'}",
        )
    assert_names(
        str(refused.value), f"config {path}", "key 'actor.optimizer.lr'", "NaN"
    )
    assert [Path(f).name for f in files_in(tmp_path / "root")] == ["config.yaml"]

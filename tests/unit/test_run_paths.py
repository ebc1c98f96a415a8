"""Relative paths in a config mean the directory the command was run from, for
every process: the entry scripts make them absolute once; hub ids stay hub ids."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from examples.eval import load_config as load_eval_config
from examples.train import load_config
from memagent_workflow.infra.paths import (
    make_shared_folders,
    resolve_model_path,
    resolve_paths,
)
from standin.train import load_config as load_cpu_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("hub_id", ["Qwen/Qwen2.5-7B-Instruct", "gpt2"])
def test_a_hub_id_without_a_local_folder_stays_a_hub_id(hub_id, tmp_path):
    assert resolve_model_path(hub_id, tmp_path) == hub_id


def test_a_local_folder_named_like_a_hub_id_is_the_local_folder(tmp_path):
    (tmp_path / "Qwen" / "Qwen2.5-7B-Instruct").mkdir(parents=True)
    got = resolve_model_path("Qwen/Qwen2.5-7B-Instruct", tmp_path)
    assert got == str(tmp_path / "Qwen" / "Qwen2.5-7B-Instruct")


@pytest.mark.parametrize(
    "value", ["outputs/cpu/needle_model", "./ckpt", "../ckpt", "a/b/c/epoch1"]
)
def test_a_path_that_cannot_be_a_hub_id_is_local_even_before_it_exists(value, tmp_path):
    got = resolve_model_path(value, tmp_path)
    assert got == os.path.abspath(tmp_path / value)
    assert not Path(got).exists()


def test_home_and_absolute_paths(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve_model_path("~/ckpt", tmp_path) == str(tmp_path / "home" / "ckpt")
    assert resolve_model_path("/abs/ckpt", tmp_path) == "/abs/ckpt"


def test_the_cpu_config_resolves_against_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_cpu_config(["--config", str(ROOT / "config_cpu.yaml")])
    cpu = tmp_path / "outputs" / "cpu"
    model = str(cpu / "needle_model")
    assert config.actor.path == config.tokenizer_path == model
    assert config.sglang.model_path == config.rollout.tokenizer_path == model
    # a file per task and size: a longer run never reuses the main job's 640
    # questions, the two-hop task never the needle's
    assert config.train_dataset.path == str(cpu / "data" / "needle" / "train_640.jsonl")
    longer = load_cpu_config(
        ["--config", str(ROOT / "config_cpu.yaml"), "standin.synthetic_train=960"]
    )
    assert longer.train_dataset.path == str(cpu / "data" / "needle" / "train_960.jsonl")
    assert config.valid_dataset.path == str(cpu / "data" / "needle" / "valid.jsonl")
    two_hop = load_cpu_config(
        [
            "--config",
            str(ROOT / "config_cpu.yaml"),
            "standin.task=two_hop",
            "standin.length_eval=[]",
        ]
    )
    assert two_hop.valid_dataset.path == str(cpu / "data" / "two_hop" / "valid.jsonl")
    assert config.cluster.name_resolve.nfs_record_root == str(cpu / "name_resolve")
    assert config.memagent.prompts == str(tmp_path / "prompts" / "needle.yaml")
    for section in ("cluster", "rollout", "saver", "recover", "evaluator"):
        assert getattr(config, section).fileroot == str(cpu / "areal"), section
    assert config.stats_logger.fileroot == config.perf_tracer.fileroot


def test_the_gpu_recipe_keeps_its_hub_model_and_resolves_its_data(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    config = load_config(["--config", str(ROOT / "config.yaml")])
    hub = "Qwen/Qwen2.5-7B-Instruct"
    assert config.actor.path == config.ref.path == config.sglang.model_path == hub
    assert config.tokenizer_path == config.vllm.model == hub
    assert config.train_dataset.path == str(tmp_path / "data/hotpotqa_train.jsonl")
    assert config.cluster.fileroot == "/tmp/areal/experiments"  # already absolute


def test_a_checkpoint_override_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ckpt = "outputs/memagent/checkpoints/epoch1epochstep10globalstep10"
    config = load_config(["--config", str(ROOT / "config.yaml"), f"actor.path={ckpt}"])
    assert config.actor.path == config.ref.path == str(tmp_path / ckpt)


def test_the_eval_config_resolves_its_folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_eval_config(["--config", str(ROOT / "config_eval.yaml")])
    assert config.eval.data_root == str(tmp_path / "data" / "ruler_hqa")
    assert config.eval.output_dir == str(tmp_path / "outputs" / "eval")
    assert config.eval.ruler_data_root == str(tmp_path / "data" / "ruler")
    assert config.actor.path == "Qwen/Qwen2.5-7B-Instruct"


def test_resolving_twice_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_cpu_config(["--config", str(ROOT / "config_cpu.yaml")])
    before = repr(config)
    resolve_paths(config, cwd=tmp_path / "elsewhere")
    assert repr(config) == before


def test_shared_folders_are_created(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_cpu_config(["--config", str(ROOT / "config_cpu.yaml")])
    fresh = tmp_path / "fresh"
    config.cluster.fileroot = str(fresh / "areal")
    config.cluster.name_resolve.nfs_record_root = str(fresh / "name_resolve")
    made = make_shared_folders(config.cluster)
    assert made == [str(fresh / "areal"), str(fresh / "name_resolve")]
    assert (fresh / "areal").is_dir() and (fresh / "name_resolve").is_dir()
    assert make_shared_folders(config.cluster) == []

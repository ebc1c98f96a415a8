"""The ``run:`` section: which code a config runs, named by import string.

The product (``examples/``, ``memagent_workflow/``) never names the stand-in;
the CPU configs plug it in through ``run:`` alone, and the GPU configs name the
product's own classes (the defaults).
"""

import re
from pathlib import Path

import pytest
from areal.utils.dynamic_import import import_from_string

from examples.eval import load_config as load_eval_config
from examples.train import load_config as load_train_config
from memagent_workflow.config import (
    MemAgentGRPOConfig,
    RunConfig,
    config_class_name,
)
from memagent_workflow.eval.config import EvalRunConfig, MemAgentEvalConfig
from memagent_workflow.eval.engine import ClusterInference
from memagent_workflow.trainer.ppo_trainer import MemAgentPPOTrainer

ROOT = Path(__file__).resolve().parents[2]


def load(loader, name, tmp_path, *overrides):
    args = ["--config", str(ROOT / name), f"cluster.fileroot={tmp_path}"]
    return loader(args + list(overrides))


def test_the_product_never_names_the_stand_in():
    word = re.compile(r"\bstandin\b")
    files = [*ROOT.glob("examples/**/*.py"), *ROOT.glob("memagent_workflow/**/*.py")]
    assert len(files) > 20
    named = [str(p.relative_to(ROOT)) for p in files if word.search(p.read_text())]
    assert named == []


def test_gpu_configs_run_the_product(tmp_path):
    cfg = load(load_train_config, "config.yaml", tmp_path)
    assert type(cfg) is MemAgentGRPOConfig and cfg.run == RunConfig()
    ev = load(load_eval_config, "config_eval.yaml", tmp_path)
    assert type(ev) is MemAgentEvalConfig and ev.run == EvalRunConfig()
    assert import_from_string(cfg.run.trainer) is MemAgentPPOTrainer
    assert import_from_string(ev.run.inference) is ClusterInference


def test_cpu_configs_plug_in_the_stand_in(tmp_path):
    from standin.config import StandinEvalConfig, StandinGRPOConfig
    from standin.cpu_job import cpu_job
    from standin.eval_inference import StandinInference
    from standin.trainer import StandinPPOTrainer

    cfg = load(load_train_config, "config_cpu.yaml", tmp_path)
    assert type(cfg) is StandinGRPOConfig and cfg.standin.task == "needle"
    assert import_from_string(cfg.run.trainer) is StandinPPOTrainer
    assert import_from_string(cfg.run.job) is cpu_job
    ev = load(load_eval_config, "config_eval_cpu.yaml", tmp_path)
    assert type(ev) is StandinEvalConfig
    assert import_from_string(ev.run.inference) is StandinInference


def test_an_override_picks_the_config_class(tmp_path):
    argv = ["--config", str(ROOT / "config.yaml"), "run.config=a.b.C"]
    assert config_class_name(argv) == "a.b.C"
    assert config_class_name(["--config", str(ROOT / "config.yaml")]) == (
        "memagent_workflow.config.MemAgentGRPOConfig"
    )
    # the product's class has no standin: section to parse the CPU file with
    with pytest.raises(Exception, match="standin"):
        load(
            load_train_config, "config_cpu.yaml", tmp_path,
            "run.config=memagent_workflow.config.MemAgentGRPOConfig",
        )  # fmt: skip


def test_a_config_class_of_another_kind_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not a subclass of MemAgentEvalConfig"):
        load(
            load_eval_config, "config_eval.yaml", tmp_path,
            "run.config=memagent_workflow.config.MemAgentGRPOConfig",
        )  # fmt: skip

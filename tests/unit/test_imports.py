"""The locked environment imports every AReaL module the project relies on.

A resolver change (e.g. an old trackio pulling gradio 3) breaks these imports
long before anything runs; this test names the module that broke.
"""

import importlib

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "areal.trainer",
        "areal.engine.sglang_remote",
        "areal.engine.fsdp_engine",
        "areal.infra.launcher.local",
        "areal.infra.workflow_executor",
        "memagent_workflow.workflow",
        "memagent_workflow.eval.workflow",
        "standin.cpu_job",
    ],
)
def test_module_imports(module):
    assert importlib.import_module(module) is not None


def test_trainer_class_is_exposed():
    from areal import PPOTrainer

    assert callable(PPOTrainer.train)

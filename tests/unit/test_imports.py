"""The locked environment imports every AReaL module the project relies on.

A resolver change (e.g. an old trackio pulling gradio 3) breaks these imports
long before anything runs; this test names the module that broke, and the
names the project takes from it.
"""

import importlib

import pytest


@pytest.mark.parametrize(
    "module, names",
    [
        ("areal.trainer", ["PPOTrainer"]),
        ("areal.engine.sglang_remote", ["RemoteSGLangEngine"]),
        ("areal.engine.fsdp_engine", ["FSDPPPOActor"]),
        ("areal.infra.launcher.local", ["LocalLauncher", "main"]),
        (
            "areal.infra.workflow_executor",
            ["WorkflowExecutor", "check_trajectory_format"],
        ),
        ("memagent_workflow.workflow", ["MemAgentWorkflow"]),
        ("memagent_workflow.eval.workflow", ["MemAgentEvalWorkflow"]),
        ("standin.cpu_job", ["cpu_job", "standin_server", "ensure_synthetic_eval"]),
        ("standin.eval_inference", ["StandinInference"]),
    ],
)
def test_module_imports(module, names):
    mod = importlib.import_module(module)
    missing = [n for n in names if not callable(getattr(mod, n, None))]
    assert not missing, f"{module} lacks {missing}"


def test_workflows_are_areal_rollout_workflows():
    from areal.api import RolloutWorkflow

    from memagent_workflow.eval.workflow import MemAgentEvalWorkflow
    from memagent_workflow.workflow import MemAgentWorkflow

    assert issubclass(MemAgentWorkflow, RolloutWorkflow)
    assert issubclass(MemAgentEvalWorkflow, MemAgentWorkflow)


def test_trainer_class_is_exposed():
    from areal import PPOTrainer

    assert callable(PPOTrainer.train)

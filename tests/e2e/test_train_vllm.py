"""The CPU main job on the vLLM path: the README's one-line override, 2 steps.

The README's command (``rollout.backend=vllm:d1`` on the main job) is run as
written, shortened by the launch tests' sizes (``SMALL_TRAINING``), from a
fresh copy of the repository under AReaL's single controller. The rollout
worker must launch the stand-in in its vLLM mode (``StandinvLLMBackend``), and
every generation and weight update must arrive in the vLLM extension's routes,
which only AReaL's ``VLLMBackend`` (inside ``RemotevLLMEngine``) speaks: the
stand-in's event log (``--event-log``) and exit report say so, and that the
server ends serving exactly the weights the actor saved. Both are stand-in only.
"""

from __future__ import annotations

import shlex

import pytest

from memagent_workflow.infra.terminal import CONSOLE_LOG
from tests.e2e.launch_runs import (
    ROOT,
    VLLM,
    Launched,
    digest_of,
    fresh_clone,
    train_cmd,
)

HEAD = "uv run python -m standin.train --config config_cpu.yaml "


def readme_overrides() -> list[str]:
    """The overrides of the README's vLLM command (its CPU section)."""
    text = (ROOT / "README.md").read_text()
    line = next(x for x in text.splitlines() if "rollout.backend=vllm" in x)
    assert line.startswith(HEAD), line
    return shlex.split(line[len(HEAD) :].split("#", 1)[0])


@pytest.fixture(scope="module")
def run(needle_model_dir, tmp_path_factory):
    clone = fresh_clone(tmp_path_factory.mktemp("vllm"), needle_model_dir)
    result = Launched(train_cmd(*readme_overrides()), clone, cwd=clone).finish()
    return result, result.routes


def test_the_readme_override_is_the_vllm_backend():
    assert readme_overrides() == [VLLM]


def test_rollouts_and_weight_updates_go_through_areals_vllm_client(run):
    result, paths = run
    (report,) = result.reports  # the one stand-in the rollout worker launched
    assert report["protocol"] == "vllm"
    assert paths["/v1/completions"] > 0 and paths["/generate"] == 0
    # one pause, disk update and resume per step (AReaL's vLLM extension routes)
    assert paths["/areal_update_weights"] == 2
    assert paths["/areal_pause_generation"] == paths["/areal_continue_generation"]
    assert [s["source"] for s in report["weight_syncs"]] == ["disk", "disk"]
    assert report["digest"] == digest_of(result.checkpoint)


def test_steps_carry_the_new_version(run):
    result, _ = run
    first, second = result.steps
    assert (first["step"], second["step"]) == (1, 2)
    assert second["oldest_rollout_version"] == 1
    assert all(s["rows"] > 0 for s in result.steps)
    console = next(result.out.rglob(CONSOLE_LOG)).read_text(errors="replace")
    assert "CPU stand-in vLLM (AReaL's extension) server" in console

"""scheduler.type=ray: the entry scripts connect to Ray (AReaL's scheduler does not)."""

import os
import subprocess
import sys

import pytest
import ray

from memagent_workflow.infra.ray_cluster import ray_for


@pytest.fixture
def calls(monkeypatch):
    log, state = [], {"up": False}

    def init(**kwargs):
        log.append("init")
        state["up"] = True

    def shutdown():
        log.append("shutdown")
        state["up"] = False

    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "shutdown", shutdown)
    monkeypatch.setattr(ray, "is_initialized", lambda: state["up"])
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2.0})
    return log, state


def test_ray_scheduler_connects_then_disconnects(calls):
    log, state = calls
    with ray_for("ray"):
        assert state["up"]
    assert log == ["init", "shutdown"]


def test_an_instance_started_earlier_is_left_alone(calls):
    log, state = calls
    state["up"] = True  # the CPU job's own local instance
    with ray_for("ray"):
        pass
    assert log == [] and state["up"]


@pytest.mark.parametrize("kind", [None, "local", "slurm"])
def test_other_schedulers_never_touch_ray(calls, kind):
    with ray_for(kind):
        pass
    assert calls[0] == []


def test_the_cpu_jobs_ray_workers_run_in_the_projects_environment():
    """Under `uv run` Ray would start the CPU job's workers through `uv run` in a
    packaged copy of the repository; the switch must be off by the time Ray is
    imported, which AReaL's modules do when the CPU entry imports them."""
    code = (
        "import standin.train, sys, ray._private.ray_constants as c; "
        "sys.exit(int(c.RAY_ENABLE_UV_RUN_RUNTIME_ENV))"
    )
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_UV_RUN_RUNTIME_ENV"}
    assert subprocess.run([sys.executable, "-c", code], env=env).returncode == 0

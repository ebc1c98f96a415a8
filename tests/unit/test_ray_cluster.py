"""scheduler.type=ray: the entry scripts connect to Ray (AReaL's scheduler does not)."""

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

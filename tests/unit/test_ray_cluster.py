"""scheduler.type=ray: the entry scripts connect to Ray (AReaL's scheduler does
not): one join, the product's, which the CPU job reuses."""

import contextlib
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import ray
from ray.exceptions import AuthenticationError

from memagent_workflow.infra.ray_cluster import ray_for


def config(kind: str | None = "ray", n_nodes: int = 1) -> SimpleNamespace:
    return SimpleNamespace(
        scheduler=SimpleNamespace(type=kind), cluster=SimpleNamespace(n_nodes=n_nodes)
    )


@pytest.fixture
def calls(monkeypatch):
    log, state = [], {"up": False, "alive": 2, "fails": None}

    def init(**kwargs):
        log.append(("init", kwargs))
        if state["fails"] is not None:
            raise state["fails"]
        state["up"] = True

    def shutdown():
        log.append("shutdown")
        state["up"] = False

    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "shutdown", shutdown)
    monkeypatch.setattr(ray, "is_initialized", lambda: state["up"])
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2.0})
    monkeypatch.setattr(
        ray,
        "nodes",
        lambda: [{"Alive": True}] * state["alive"] + [{"Alive": False}],
    )
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return log, state


def test_ray_scheduler_connects_then_disconnects(calls):
    log, state = calls
    with ray_for(config()):
        assert state["up"]
    assert log == [("init", {}), "shutdown"]


def test_an_instance_started_earlier_is_left_alone(calls):
    log, state = calls
    state["up"] = True  # the CPU job's own local instance
    with ray_for(config()):
        pass
    assert log == [] and state["up"]


@pytest.mark.parametrize("kind", [None, "local", "slurm"])
def test_other_schedulers_never_touch_ray(calls, kind):
    with ray_for(config(kind, n_nodes=4)):
        pass
    assert calls[0] == []


@pytest.mark.parametrize("address", [None, "10.0.0.1:6379"])
def test_several_nodes_join_a_running_cluster_and_never_start_one(
    calls, monkeypatch, address
):
    log, state = calls
    if address:
        monkeypatch.setenv("RAY_ADDRESS", address)
    with ray_for(config(n_nodes=2)):
        assert state["up"]
    assert log == [
        ("init", {"address": address or "auto", "include_dashboard": False}),
        "shutdown",
    ]


def test_too_few_alive_nodes_are_refused(calls):
    log, state = calls
    state["alive"] = 3  # and one dead
    with pytest.raises(RuntimeError) as refused:
        with ray_for(config(n_nodes=4)):
            pytest.fail("ran on too few nodes")
    assert str(refused.value).startswith(
        "cluster.n_nodes=4, but the Ray cluster has 3 alive node(s) (RAY_ADDRESS=auto)"
    )
    assert log[-1] == "shutdown" and not state["up"]


def test_no_cluster_is_refused_saying_to_start_one(calls):
    _, state = calls
    state["fails"] = ConnectionError("Could not find any running Ray instance")
    with pytest.raises(
        RuntimeError, match="joins a running Ray cluster, and none answers at auto"
    ):
        with ray_for(config(n_nodes=2)):
            pass


@pytest.mark.parametrize("mode", ["token", None])
def test_an_unanswered_join_names_tokens_unless_the_mode_is_token(
    calls, monkeypatch, mode
):
    _, state = calls
    state["fails"] = ConnectionError("Failed to connect to GCS")
    if mode:
        monkeypatch.setenv("RAY_AUTH_MODE", mode)
    else:
        monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    with pytest.raises(RuntimeError) as refused:
        with ray_for(config(n_nodes=2)):
            pass
    assert ("if the cluster uses tokens" in str(refused.value)) is (mode is None)


def test_a_missing_token_is_refused_saying_what_to_copy(calls):
    _, state = calls
    state["fails"] = AuthenticationError("no authentication token was found")
    with pytest.raises(RuntimeError) as refused:
        with ray_for(config(n_nodes=2)):
            pass
    assert "copy the head node's ~/.ray/auth_token" in str(refused.value)
    assert "RAY_AUTH_MODE=token" in str(refused.value)


def test_the_cpu_job_joins_with_the_products_join(monkeypatch, tmp_path):
    """cluster.n_nodes=2 under the stand-in: `single_controller` enters the
    product's `ray_for` (no join of its own, no local Ray)."""
    from memagent_workflow.infra import ray_cluster
    from standin import cpu_job

    assert cpu_job.ray_for is ray_cluster.ray_for
    entered = []
    monkeypatch.setattr(cpu_job, "build_model", lambda c: None)
    monkeypatch.setattr(
        cpu_job, "ray_for", lambda c: entered.append(c) or contextlib.nullcontext()
    )
    monkeypatch.setattr(cpu_job, "local_ray", lambda n: pytest.fail("local Ray"))
    cfg = config(n_nodes=2)
    cfg.cluster.fileroot = str(tmp_path)
    cfg.cluster.name_resolve = SimpleNamespace(type="etcd")
    with cpu_job.single_controller(cfg):
        pass
    assert entered == [cfg]


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

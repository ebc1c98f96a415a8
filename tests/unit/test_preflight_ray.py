"""Preflight, Ray: a reachable cluster, and nodes whose resources hold the worker
specs placed on them (8 workers x mem 64 = 512 GiB per node)."""

from __future__ import annotations

import copy

import pytest

from memagent_workflow.preflight import Verdict
from memagent_workflow.preflight.cluster import check_ray, node_need
from memagent_workflow.preflight.placement import Bundle, place
from memagent_workflow.preflight.probes import RayNode
from tests.unit.preflight_fakes import (
    GIB,
    FakeHardware,
    FakeRay,
    gpus,
    h100_node,
    load,
    run_of,
)

PAPER_SCALE = (
    "scheduler.type=ray",
    "cluster.n_nodes=4",
    "rollout.backend=sglang:d16p1t1",
    "actor.backend=fsdp:d16p1t1",
)


@pytest.fixture(scope="module")
def cfg():
    return load("config.yaml", *PAPER_SCALE)


def test_a_node_needs_the_sum_of_its_workers_specs(cfg):
    need = node_need(run_of(cfg))
    assert (need.workers, need.gpus, need.cpus) == (8, 8, 8 * 8)
    spec_mem = cfg.actor.scheduling_spec[0].mem  # GB per worker (config.yaml: 32)
    assert need.memory_bytes == 8 * spec_mem * GIB


def test_unreachable_ray_fails_for_several_nodes(cfg):
    check = check_ray(run_of(cfg, ray=FakeRay(error="ConnectionError: no cluster")))
    assert check.verdict is Verdict.FAIL
    assert "no cluster reachable" in check.found and "ray start" in check.fix


def test_nodes_with_too_little_ray_memory_fail(cfg):
    need_gib = 8 * cfg.actor.scheduling_spec[0].mem  # 256 GiB at config.yaml's 32
    small = FakeRay(nodes=[h100_node(need_gib - 6) for _ in range(4)])
    check = check_ray(run_of(cfg, ray=small))
    assert check.verdict is Verdict.FAIL
    assert f"memory {need_gib - 6} GiB < {need_gib} GiB" in check.fix


def test_nodes_that_hold_the_specs_pass(cfg):
    big = FakeRay(nodes=[h100_node(1400) for _ in range(4)])
    assert check_ray(run_of(cfg, ray=big)).verdict is Verdict.OK


def test_missing_nodes_fail(cfg):
    three = FakeRay(nodes=[h100_node(1400) for _ in range(3)])
    check = check_ray(run_of(cfg, ray=three))
    assert check.verdict is Verdict.FAIL and "3 alive node(s)" in check.found


def test_one_node_without_a_cluster_is_checked_against_this_machine():
    one = load("config.yaml", "scheduler.type=ray")
    roomy = FakeHardware(gpus(8), cpus=128, memory_gib=1024)  # Ray gets ~717 GiB
    assert check_ray(run_of(one, hardware=roomy)).verdict is Verdict.OK
    tight = FakeHardware(gpus(8), cpus=128, memory_gib=320)  # ~224 GiB < 256
    assert check_ray(run_of(one, hardware=tight)).verdict is Verdict.FAIL


def test_not_a_ray_run():
    local = load("config.yaml", "scheduler.type=local")
    assert check_ray(run_of(local)).verdict is Verdict.NA


@pytest.fixture
def http_ray(monkeypatch):
    """The check as it reads AReaL main's RayScheduler over HTTP (`RAY_OVER_HTTP`)."""
    monkeypatch.setattr("memagent_workflow.preflight.cluster.RAY_OVER_HTTP", True)


def test_http_scheduler_on_gpu_nodes_that_hold_the_specs_passes(cfg, http_ray):
    big = FakeRay(nodes=[h100_node(1400) for _ in range(4)])
    check = check_ray(run_of(cfg, ray=big))
    assert check.verdict is Verdict.OK
    assert "one bundle per role and node" in check.needed


def test_http_scheduler_refuses_a_cluster_without_gpus(cfg, http_ray):
    cpu_only = FakeRay(nodes=[h100_node(1400, gpus=0) for _ in range(4)])
    check = check_ray(run_of(cfg, ray=cpu_only))
    assert check.verdict is Verdict.FAIL and "no GPU on 4 node(s)" in check.found
    assert "GPU clusters only" in check.fix and "scheduler.type=local" in check.fix


def test_http_scheduler_refuses_this_machine_without_gpus(http_ray):
    one = load("config.yaml", "scheduler.type=ray")
    check = check_ray(run_of(one, hardware=FakeHardware(gpus(0))))
    assert check.verdict is Verdict.FAIL and check.found == "no GPU on this machine"


def test_http_scheduler_refuses_additional_bash_cmds(http_ray):
    bash = copy.deepcopy(load("config.yaml", "scheduler.type=ray"))
    bash.actor.scheduling_spec[0].additional_bash_cmds = ["ulimit -n 65536"]
    check = check_ray(run_of(bash, hardware=FakeHardware(gpus(8))))
    assert check.verdict is Verdict.FAIL
    assert check.found == "actor.scheduling_spec sets additional_bash_cmds"


def test_placement_group_scheduler_is_not_refused_for_want_of_gpus(monkeypatch):
    """1.0.4 and the v2.0.0 tag place CPU workers too (the CPU Ray launch):
    without GPUs, the check counts the node's GPUs against the specs only."""
    monkeypatch.setattr("memagent_workflow.preflight.cluster.RAY_OVER_HTTP", False)
    one = load("config.yaml", "scheduler.type=ray")
    check = check_ray(run_of(one, hardware=FakeHardware(gpus(0))))
    assert "GPU 0 < 8" in check.fix and "GPU clusters only" not in check.fix
    assert "bundle per role" not in check.needed


# The CPU main job on two Ray nodes (docs/multi-node.md): one actor and one
# rollout worker, each asking Ray for CPU 1 and 2 GiB (config_cpu.yaml's spec).
TWO_NODES = ("scheduler.type=ray", "cluster.n_nodes=2")


def cpu_node(port: int, cpus: float, memory_gib: float) -> RayNode:
    return RayNode(f"192.0.2.2:{port}", cpus, 0, memory_gib * GIB)


def test_cpu_workers_are_placed_one_per_node_when_a_node_holds_one():
    run = run_of(
        load("config_cpu.yaml", *TWO_NODES),
        ray=FakeRay(nodes=[cpu_node(1, 1, 3), cpu_node(2, 1, 3)]),
    )
    check = check_ray(run)
    assert check.verdict is Verdict.OK, check
    placed = check.needed.split("placed: ")[1]
    assert sorted(placed.split(", ")) in (
        ["actor/0 -> 192.0.2.2:1", "rollout/0 -> 192.0.2.2:2"],
        ["actor/0 -> 192.0.2.2:2", "rollout/0 -> 192.0.2.2:1"],
    )


def test_cpu_workers_that_fit_no_node_fail_naming_the_worker():
    small = FakeRay(nodes=[cpu_node(1, 1, 3), cpu_node(2, 1, 1.5)])
    check = check_ray(run_of(load("config_cpu.yaml", *TWO_NODES), ray=small))
    assert check.verdict is Verdict.FAIL
    assert "(CPU 1, memory 2 GiB) fits on no node" in check.fix
    assert "192.0.2.2:2 has CPU 1, memory 1.5 GiB left" in check.fix


def test_cpu_workers_share_a_node_that_holds_both():
    roomy = FakeRay(nodes=[cpu_node(1, 2, 6), cpu_node(2, 1, 3)])
    check = check_ray(run_of(load("config_cpu.yaml", *TWO_NODES), ray=roomy))
    assert check.verdict is Verdict.OK
    assert "actor/0 -> 192.0.2.2:1, rollout/0 -> 192.0.2.2:1" in check.needed


def test_placement_packs_largest_first_and_stops_at_the_first_misfit():
    bundles = [Bundle("a", 1, GIB), Bundle("b", 2, GIB), Bundle("c", 1, GIB)]
    nodes = [cpu_node(1, 2, 8), cpu_node(2, 2, 8)]
    assert place(bundles, nodes).node_of == {
        "a": "192.0.2.2:2",
        "b": "192.0.2.2:1",
        "c": "192.0.2.2:2",
    }
    misfit = place([*bundles, Bundle("d", 1, GIB)], nodes)
    assert misfit.unplaced == Bundle("d", 1, GIB)

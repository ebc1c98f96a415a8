"""Preflight, Ray: a reachable cluster, and nodes whose resources hold the worker
specs placed on them (8 workers x mem 64 = 512 GiB per node)."""

from __future__ import annotations

import pytest

from memagent_workflow.preflight import Verdict
from memagent_workflow.preflight.cluster import check_ray, node_need
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

"""Preflight, hardware: visible GPUs against the layout, SM against SGLang's
attention backend, free memory; fake GPU lists both ways."""

from __future__ import annotations

import pytest

from memagent_workflow.preflight import Verdict
from memagent_workflow.preflight.hardware import (
    check_capability,
    check_free_memory,
    check_gpu_count,
)
from tests.unit.preflight_fakes import GIB, FakeHardware, changed, gpus, load, run_of


@pytest.fixture(scope="module")
def cfg():
    return load("config.yaml", "scheduler.type=local")


@pytest.mark.parametrize(
    "n, verdict", [(8, Verdict.OK), (4, Verdict.FAIL), (0, Verdict.FAIL)]
)
def test_visible_gpus_against_rollout_plus_actor(cfg, n, verdict):
    check = check_gpu_count(run_of(cfg, hardware=FakeHardware(gpus(n))))
    assert check.verdict is verdict
    assert "rollout 4 + actor 4" in check.needed


def test_a_layout_larger_than_the_cluster_fails():
    cfg = load("config.yaml", "scheduler.type=local", "rollout.backend=sglang:d8p1t1")
    check = check_gpu_count(run_of(cfg, hardware=FakeHardware(gpus(16))))
    assert check.verdict is Verdict.FAIL and "<= cluster.n_nodes" in check.needed


def test_debug_layout_on_two_gpus_passes():
    cfg = load(
        "config.yaml",
        "scheduler.type=local",
        "cluster.n_gpus_per_node=2",
        "rollout.backend=sglang:d1p1t1",
        "actor.backend=fsdp:d1p1t1",
    )
    assert (
        check_gpu_count(run_of(cfg, hardware=FakeHardware(gpus(2)))).verdict
        is Verdict.OK
    )


@pytest.mark.parametrize(
    "sm, backend, verdict",
    [
        ((9, 0), "fa3", Verdict.OK),  # H100
        ((8, 0), "fa3", Verdict.OK),  # A100
        ((10, 0), "fa3", Verdict.FAIL),  # B200: SGLang asserts
        ((12, 0), "fa3", Verdict.FAIL),
        ((10, 0), "flashinfer", Verdict.OK),
    ],
)
def test_sm_against_sglang_attention_backend(cfg, sm, backend, verdict):
    cfg = changed(cfg, sglang__attention_backend=backend)
    check = check_capability(run_of(cfg, hardware=FakeHardware(gpus(8, sm=sm))))
    assert check.verdict is verdict
    if verdict is Verdict.FAIL:
        assert "flashinfer" in check.fix


def test_config_yaml_keeps_fa3():
    assert load("config.yaml").sglang.attention_backend == "fa3"


def test_free_memory_taken_by_another_process_fails(cfg):
    busy = gpus(8)
    busy[3] = busy[3].__class__(3, busy[3].name, (9, 0), busy[3].total_bytes, 20 * GIB)
    check = check_free_memory(run_of(cfg, hardware=FakeHardware(busy)), 60 * GIB)
    assert check.verdict is Verdict.FAIL and "[3]" in check.fix
    assert check_free_memory(run_of(cfg), 60 * GIB).verdict is Verdict.OK


def test_cpu_run_has_no_gpu_items():
    run = run_of(load("config_cpu.yaml"), hardware=FakeHardware())
    for check in (
        check_gpu_count(run),
        check_capability(run),
        check_free_memory(run, None),
    ):
        assert check.verdict is Verdict.NA

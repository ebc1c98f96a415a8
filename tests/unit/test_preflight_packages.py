"""Preflight, packages: SGLang's version, FlashAttention's functions, CUDA torch,
NCCL and the environment on PATH, each both ways."""

from __future__ import annotations

import sys

import pytest

from memagent_workflow.preflight import Verdict
from memagent_workflow.preflight.packages import (
    check_engine,
    check_flash_attention,
    check_nccl,
    check_path_python,
    check_sglang,
    check_torch_cuda,
)
from memagent_workflow.preflight.probes import PackageProbe
from tests.unit.preflight_fakes import FakePackages, changed, load, run_of


@pytest.fixture(scope="module")
def gpu_config():
    return load("config.yaml", "scheduler.type=local")


def fake_flash_attn(root, *, functions: bool, version: str = "4.0.0b36"):
    """A ``flash_attn`` package on ``root``. Without the functions it is what
    flash-attn-4 installs: a folder holding only ``cute/`` (no ``__init__.py``)."""
    pkg = root / "flash_attn"
    (pkg / "cute").mkdir(parents=True)
    (pkg / "cute" / "__init__.py").write_text("")
    if functions:
        (pkg / "__init__.py").write_text(
            "def flash_attn_func(*a): pass\ndef flash_attn_varlen_func(*a): pass\n"
        )
        (pkg / "bert_padding.py").write_text(
            "def pad_input(*a): pass\ndef unpad_input(*a): pass\n"
        )
    dist = root / f"flash_attn_4-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: flash-attn-4\nVersion: {version}\n"
    )
    (dist / "top_level.txt").write_text("flash_attn\n")


@pytest.fixture
def isolated_flash_attn(monkeypatch, tmp_path):
    for name in [m for m in sys.modules if m.split(".")[0] == "flash_attn"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.split(".")[0] == "flash_attn"]:
        del sys.modules[name]


def test_flash_attn_4_without_flash_attn_func_fails(gpu_config, isolated_flash_attn):
    fake_flash_attn(isolated_flash_attn, functions=False)
    check = check_flash_attention(run_of(gpu_config, packages=PackageProbe()))
    assert check.verdict is Verdict.FAIL
    assert "flash-attn-4 4.0.0b36" in check.found
    assert "flash_attn_func" in check.found and "flash_attn_varlen_func" in check.found


def test_flash_attn_with_the_functions_passes(gpu_config, isolated_flash_attn):
    fake_flash_attn(isolated_flash_attn, functions=True, version="2.8.3")
    check = check_flash_attention(run_of(gpu_config, packages=PackageProbe()))
    assert check.verdict is Verdict.OK, check


def test_no_flash_attn_at_all_fails(gpu_config, isolated_flash_attn):
    check = check_flash_attention(run_of(gpu_config, packages=PackageProbe()))
    assert check.verdict is Verdict.FAIL
    assert "No module named 'flash_attn'" in check.found


def test_sdpa_on_gpu_fails_packed_rows_would_mix(gpu_config):
    check = check_flash_attention(run_of(changed(gpu_config, actor__attn_impl="sdpa")))
    assert check.verdict is Verdict.FAIL and "attend to each other" in check.fix


def test_cpu_run_needs_no_gpu_package():
    run = run_of(load("config_cpu.yaml"), packages=FakePackages(cuda=None, nccl=None))
    for check in (check_engine, check_flash_attention, check_torch_cuda, check_nccl):
        assert check(run).verdict is Verdict.NA


@pytest.mark.parametrize(
    "installed, verdict",
    [
        (None, Verdict.FAIL),
        ("0.5.9", Verdict.FAIL),
        ("0.5.10.post1", Verdict.OK),
        ("0.5.11", Verdict.WARN),
    ],
)
def test_sglang_version_against_arealS_minimum(gpu_config, installed, verdict):
    versions = {"sglang": installed} if installed else {}
    check = check_sglang(run_of(gpu_config, packages=FakePackages(versions)))
    assert check.verdict is verdict, check


def test_eval_against_running_servers_needs_no_sglang():
    cfg = load("config_eval.yaml")  # scheduler.type null, no allocation_mode
    check = check_engine(run_of(cfg, kind="eval", packages=FakePackages()))
    assert check.verdict is Verdict.NA


@pytest.mark.parametrize("cuda, verdict", [("12.8", Verdict.OK), (None, Verdict.FAIL)])
def test_torch_cuda_build(gpu_config, cuda, verdict):
    assert (
        check_torch_cuda(run_of(gpu_config, packages=FakePackages(cuda=cuda))).verdict
        is verdict
    )


@pytest.mark.parametrize(
    "nccl, verdict", [("2.27.5", Verdict.OK), (None, Verdict.FAIL)]
)
def test_nccl(gpu_config, nccl, verdict):
    assert (
        check_nccl(run_of(gpu_config, packages=FakePackages(nccl=nccl))).verdict
        is verdict
    )


@pytest.mark.parametrize(
    "prefix, verdict",
    [("/env", Verdict.OK), ("/usr", Verdict.FAIL), (None, Verdict.FAIL)],
)
def test_python3_on_path_must_be_this_environment(gpu_config, prefix, verdict):
    check = check_path_python(
        run_of(gpu_config, packages=FakePackages(path_prefix=prefix))
    )
    assert check.verdict is verdict
    if verdict is Verdict.FAIL:
        assert "activate" in check.fix


def test_real_probe_sees_this_interpreter_on_path():
    # `uv run pytest` puts the project's environment first on PATH.
    exe, prefix = PackageProbe().path_python_prefix()
    assert prefix == sys.prefix, (
        f"`python` on PATH is {exe} (prefix {prefix}), not this interpreter's "
        f"environment ({sys.prefix}): run the tests as the README does, "
        "`uv run pytest ...`, or activate .venv first"
    )

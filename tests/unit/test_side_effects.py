"""Side effects happen where a run asks for them, and environment changes are undone."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KEY = "RAY_worker_niceness"


def test_importing_the_stand_in_model_registers_no_attention():
    probe = (
        "from transformers import AttentionInterface as A\n"
        "import standin.model as m\n"
        "before = m.GROUPED_ATTN in A._global_mapping\n"
        "m.register_grouped_attention()\n"
        "print(before, m.GROUPED_ATTN in A._global_mapping)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "True"]


def test_environ_restores_set_and_unset_keys(monkeypatch):
    from standin.cpu_job import environ

    monkeypatch.setenv("MEMAGENT_TEST_SET", "old")
    monkeypatch.delenv("MEMAGENT_TEST_UNSET", raising=False)
    with pytest.raises(RuntimeError):
        with environ({"MEMAGENT_TEST_SET": "new", "MEMAGENT_TEST_UNSET": "1"}):
            assert os.environ["MEMAGENT_TEST_SET"] == "new"
            assert os.environ["MEMAGENT_TEST_UNSET"] == "1"
            raise RuntimeError("the run failed")
    assert os.environ["MEMAGENT_TEST_SET"] == "old"
    assert "MEMAGENT_TEST_UNSET" not in os.environ


def test_local_ray_undoes_its_niceness_setting(monkeypatch):
    import ray

    from standin.cpu_job import local_ray

    seen = {}
    monkeypatch.setenv(KEY, "1")
    monkeypatch.setattr(
        ray, "init", lambda **kw: seen.update(kw, env=os.environ.get(KEY))
    )
    monkeypatch.setattr(ray, "shutdown", lambda: seen.update(shutdown=True))
    with local_ray(2):
        assert os.environ[KEY] == "0"
    assert seen == {
        "address": "local",  # its own, even beside a running cluster
        "num_cpus": 2,
        "include_dashboard": False,
        "env": "0",
        "shutdown": True,
    }
    assert os.environ[KEY] == "1"

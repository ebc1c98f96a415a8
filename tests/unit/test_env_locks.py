"""The engine environments' locks (envs/*/uv.lock) record the project as it is declared.

Each env installs this project editable; `uv sync --locked` there refuses a lock whose copy
of the project's requirements differs from pyproject.toml (CI's vLLM stage failed so once,
after a dependency was added at the root only). The root lock is checked by `--locked`
itself, so each env's copy must equal the root's.
"""

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV_LOCKS = sorted((ROOT / "envs").glob("*/uv.lock"))


def _project_metadata(lock: Path) -> dict:
    packages = tomllib.loads(lock.read_text())["package"]
    (project,) = [p for p in packages if p["name"] == "memagent-areal"]
    return project["metadata"]


def test_every_env_has_a_lock():
    assert {p.parent.name for p in ENV_LOCKS} == {"vllm", "vllm-cpu"}


@pytest.mark.parametrize("lock", ENV_LOCKS, ids=lambda p: p.parent.name)
def test_env_lock_records_the_declared_project(lock: Path):
    root = _project_metadata(ROOT / "uv.lock")
    env = _project_metadata(lock)
    assert env == root, (
        f"{lock.relative_to(ROOT)} records other requirements for this project than "
        f"uv.lock; run `uv lock --project {lock.parent.relative_to(ROOT)}`"
    )

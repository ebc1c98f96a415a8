"""Ray launches on a machine that never ran Ray, and their ends (docs/ray-auth.md).

- docs/multi-node.md's two-node command, started in a ``HOME`` that has no
  ``~/.ray/auth_token`` (where `ray start` alone refuses to start under
  ``RAY_AUTH_MODE=token``): it makes the token, says so, and the product's join
  (`memagent_workflow.infra.ray_cluster.join_cluster`) joins both nodes with it,
  and refuses a third that is not there.
- A one-node ``scheduler.type=ray`` run (the job's own Ray instance), as the
  issue wrote it: ``uv run python -m standin.train --config config_cpu.yaml
  scheduler.type=ray total_train_steps=2``. It must exit 0 after its 2 steps:
  the node watcher stands down at the trainer's close, and before the job's
  Ray is shut down, so Ray's shutdown is not taken for a lost cluster (it
  was: the length eval after training outlived the watcher's 30 s grace, and
  the run exited 75).

The two-node run's own exit 0 is tests/e2e/test_train_launch.py's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from memagent_workflow.infra.terminal import CONSOLE_LOG
from tests.areal_release import NO_CPU_RAY
from tests.e2e.launch_runs import Launched, fresh_clone
from tests.e2e.ray_cluster import RayNodes

pytestmark = NO_CPU_RAY

JOIN = """
from memagent_workflow.infra.ray_cluster import join_cluster, shutdown
join_cluster(2)
print("JOINED", flush=True)
shutdown()
try:
    join_cluster(3)
except RuntimeError as exc:
    print("REFUSED", exc, flush=True)
"""


def test_two_nodes_start_where_ray_never_ran_and_the_product_joins(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    nodes = RayNodes(tmp_path, env)
    try:
        assert (
            "Ray authentication: token made now in ~/.ray/auth_token "
            "(docs/ray-auth.md)" in nodes.printed
        ), nodes.printed
        token = (home / ".ray" / "auth_token").read_text()
        assert token and not any(token in line for line in nodes.printed)
        joined = subprocess.run(
            [sys.executable, "-c", JOIN],
            env={**env, **nodes.env()},
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        nodes.stop()
    said = joined.stdout.splitlines()
    assert joined.returncode == 0 and "JOINED" in said, joined.stderr[-3000:]
    assert (
        "REFUSED cluster.n_nodes=3, but the Ray cluster has 2 alive node(s) "
        f"(RAY_ADDRESS={nodes.address}): start the missing ones first"
    ) in said


@pytest.fixture(scope="module")
def one_node(needle_model_dir, tmp_path_factory):
    clone = fresh_clone(tmp_path_factory.mktemp("ray_one_node"))
    shutil.copytree(needle_model_dir, clone / "outputs" / "cpu" / "needle_model")
    cmd = [
        sys.executable, "-m", "standin.train", "--config", "config_cpu.yaml",
        "scheduler.type=ray", "total_train_steps=2",
    ]  # fmt: skip
    return Launched(cmd, clone / "run", cwd=clone).finish(timeout=1200), clone


def test_a_one_node_ray_run_exits_0_after_its_steps(one_node):
    run, clone = one_node  # finish() asserts the exit status
    steps = next((clone / "outputs").rglob("steps.jsonl")).read_text().splitlines()
    assert [json.loads(line)["step"] for line in steps] == [1, 2]
    console = next((clone / "outputs").rglob(CONSOLE_LOG)).read_text(errors="replace")
    assert "stopped the local Ray instance" in console
    for wrong in ("stopped answering", "was lost", "the run did not stop"):
        assert wrong not in console and wrong not in run.log, run.log[-4000:]
    assert run.log.count("Started a local Ray instance") == 1  # none on the way out

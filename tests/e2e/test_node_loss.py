"""A Ray node lost mid-run: the CPU main job stops naming it, and resumes on a healed cluster.

docs/multi-node.md's commands, in a fresh copy of the repository: its two-node
cluster, then its launch (3 steps of 2 questions, validation at step 2: the
eval-rollout worker is forked beside the rollout worker). Once step 1 is
reported, the second node dies as a machine does: its raylet and every process
under it SIGKILLed (the job's driver, like a cluster's, is attached to the head
node's raylet). The run must stop within `ray_scheduler.NODE_LOST_BOUND_S` of
the kill and name that node and its workers. Then the cluster is started again
(a healed cluster: two fresh nodes) and the same command resumes from the last
recover checkpoint the lost run saved and finishes: each step is reported
once, a step trained but never reported is marked lost, and every question is
trained exactly once.

Which checkpoint that is depends on the machine: step 1's, or step 2's when
step 2 trained in the moment between step 1's report and the kill (a fast
machine can; the CI machine did once). The test reads it from the lost run's
recover info, as the rerun does, and checks the rerun against it.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memagent_workflow.infra.ray_scheduler import NODE_LOST_BOUND_S
from memagent_workflow.preflight import Verdict
from memagent_workflow.preflight.cluster import check_ray
from memagent_workflow.preflight.probes import RayProbe
from memagent_workflow.recovery.checkpoint import resumable_step
from standin.cpu_job import environ
from tests.areal_release import NO_CPU_RAY
from tests.e2e.launch_runs import (
    SMALL_TRAINING,
    Launched,
    digest_of,
    fresh_clone,
    worker_env,
)
from tests.e2e.ray_cluster import RayNodes, doc_command
from tests.unit.preflight_fakes import load, run_of

pytestmark = NO_CPU_RAY
PLACED = re.compile(r"(\S+/\d+) on Ray node (\S+ \(\w+\))")
TRIAL = ("outputs", "cpu", "areal", "logs")


STEPS = 3  # a rerun trains at least one step, whichever checkpoint it resumes
SIZES = {"total_train_steps": STEPS, "standin.synthetic_train": 2 * STEPS}


def launch_cmd() -> list[str]:
    small = [a for a in SMALL_TRAINING if a.split("=")[0] not in SIZES]
    sizes = [f"{key}={value}" for key, value in SIZES.items()]
    return [*doc_command("uv run python -m standin.train"), *small, *sizes]


def first_lines(path, n: int, proc, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_file() and len(path.read_text().splitlines()) >= n:
            return
        assert proc.poll() is None, "the run ended before step 1"
        time.sleep(0.1)  # the kill follows step 1's report closely
    raise AssertionError(f"no step {n} within {timeout:.0f} s")


@pytest.fixture(scope="module")
def chain(needle_model_dir, tmp_path_factory):
    clone = fresh_clone(tmp_path_factory.mktemp("node_loss"))
    shutil.copytree(needle_model_dir, clone / "outputs" / "cpu" / "needle_model")
    # The workers inherit the cluster's environment: the lost run's stand-in
    # reports under lost/, the resumed run's under the clone (Run.reports).
    cluster = RayNodes(clone, worker_env(clone / "lost"))
    preflight = run_preflight(clone, cluster)
    lost = Launched(launch_cmd(), clone / "lost", cwd=clone, env=cluster.env())
    try:
        steps = next_file(clone, "steps.jsonl", lost.proc)
        first_lines(steps, 1, lost.proc)
        placed = dict(PLACED.findall(read(clone, "main.log")))
        victim = 1  # the second node (the job's driver is on the head's raylet)
        cluster.lose(victim)
        killed = time.monotonic()
        lost.proc.wait(timeout=NODE_LOST_BOUND_S + 60)
        stopped_s = time.monotonic() - killed
        saved = recover_step(clone)
        reported = len(steps.read_text().splitlines())
    finally:
        if lost.proc.poll() is None:
            lost.proc.kill()
        lost._log.close()
        cluster.stop()
    healed = RayNodes(clone, worker_env(clone))
    try:
        resumed = Launched(launch_cmd(), clone, cwd=clone, env=healed.env()).finish()
    finally:
        healed.stop()
    return {
        "clone": clone,
        "preflight": preflight,
        "nodes": [n.name for n in cluster.nodes],
        "placed": placed,
        "victim": cluster.nodes[victim].name,
        "lost_rc": lost.proc.returncode,
        "lost_log": lost.log_path.read_text(errors="replace"),
        "stopped_s": stopped_s,
        "saved": saved,  # the lost run's last recover checkpoint (global step)
        "reported": reported,  # the steps it reported
        "resumed": resumed,
    }


def run_preflight(clone, cluster: RayNodes) -> dict:
    """docs/multi-node.md's preflight against the live cluster, and its Ray row
    as the probe reads that cluster, for the config as written and for workers
    too big for its nodes (``mem: 4`` on 3 GiB nodes)."""
    cmd = doc_command("uv run python -m standin.preflight")
    env = {**os.environ, **cluster.env()}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # uv run's
    proc = subprocess.run(
        cmd, cwd=clone, env=env, capture_output=True, text=True, timeout=600
    )
    config = load("config_cpu.yaml", *[a for a in cmd if "=" in a])
    too_big = copy.deepcopy(config)
    too_big.actor.scheduling_spec[0].mem = 4
    with environ(cluster.env()):  # the probe joins RAY_ADDRESS
        checks = {
            name: check_ray(run_of(c, ray=RayProbe()))
            for name, c in (("fits", config), ("too_big", too_big))
        }
    return {"rc": proc.returncode, "out": proc.stdout + proc.stderr, **checks}


def next_file(clone, name: str, proc, timeout: float = 900):
    """The path ``name`` will have under the run's log folder (once it exists)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = (
            list((clone.joinpath(*TRIAL)).rglob(name))
            if clone.joinpath(*TRIAL).is_dir()
            else []
        )
        if found:
            return found[0]
        assert proc.poll() is None, "the run ended before writing " + name
        time.sleep(0.5)
    raise AssertionError(f"no {name} within {timeout:.0f} s")


def recover_step(clone) -> int:
    """The global step the rerun resumes after: the lost run's last complete
    recover checkpoint (the kill can cut step 2's write short, which leaves
    step 1's set aside as ``recover_info.prev``)."""
    root = clone.joinpath(*TRIAL[:-1])
    (save_root,) = {p.parent for p in root.rglob("recover_info*") if p.is_dir()}
    step = resumable_step(save_root / "recover_info")
    assert step is not None, sorted(map(str, save_root.iterdir()))
    return step


def read(clone, name: str) -> str:
    return next(clone.joinpath(*TRIAL).rglob(name)).read_text(errors="replace")


def test_the_preflight_reads_both_nodes_and_refuses_what_fits_neither(chain):
    preflight, ports = (
        chain["preflight"],
        [n.split()[0].split(":")[1] for n in chain["nodes"]],
    )
    assert preflight["rc"] == 0, preflight["out"][-3000:]
    assert "ray: cluster and placement" in preflight["out"]
    fits = preflight["fits"]
    assert fits.verdict is Verdict.OK
    placed = fits.needed.split("placed: ")[1]
    for port in ports:  # each node's resources, and a worker placed there
        assert f":{port}: CPU 1, memory 3.0 GiB" in fits.found
        assert f":{port}" in placed
    too_big = preflight["too_big"]
    assert too_big.verdict is Verdict.FAIL
    assert "(CPU 1, memory 4 GiB) fits on no node" in too_big.fix


def test_the_workers_ran_on_both_nodes(chain):
    placed = chain["placed"]
    assert {"actor/0", "rollout/0", "eval-rollout/0"} <= set(placed)
    assert placed["actor/0"] != placed["rollout/0"]
    assert placed["eval-rollout/0"] == placed["rollout/0"]  # forked beside it


def test_the_lost_node_stops_the_run_within_the_bound_naming_it(chain):
    assert chain["lost_rc"] != 0
    assert chain["stopped_s"] <= NODE_LOST_BOUND_S, chain["lost_log"][-3000:]
    held = ", ".join(
        sorted(w for w, n in chain["placed"].items() if n == chain["victim"])
    )
    assert f"Ray node {chain['victim']} was lost; it held {held}" in chain["lost_log"]


def test_the_rerun_resumes_and_nothing_is_lost_or_repeated(chain):
    resumed, saved = chain["resumed"], chain["saved"]
    # step 1's report follows its recover checkpoint: at least that one
    assert saved + 1 >= chain["reported"] >= 1
    assert f"resumed from the recover checkpoint of global step {saved}" in resumed.log
    assert [s["step"] for s in resumed.steps] == list(range(1, STEPS + 1))
    # trained and saved, but the node died before it was reported
    unreported = list(range(chain["reported"] + 1, saved + 2))
    assert [s["step"] for s in resumed.steps if s.get("lost")] == unreported
    ledger = [
        json.loads(x) for x in read(chain["clone"], "questions.jsonl").splitlines()
    ]
    batches = {}  # a step redone after the loss: its last line wins
    for line in ledger:
        if "questions" in line:
            batches[line["step"]] = list(
                zip(line["questions"], line["passes"], strict=True)
            )
    assert sorted(batches) == list(range(STEPS))
    trained = [qp for batch in batches.values() for qp in batch]
    # STEPS x 2 questions, one epoch: each question once
    assert len(trained) == len(set(trained)) == 2 * STEPS
    # handed out at the end and not trained (rolling out, read ahead): the next
    # pass's, never this one's, as in test_recover
    assert all(p == 1 for _, p in ledger[-1]["untrained"])
    assert all(p == 0 for _, p in trained)


def test_the_resumed_run_synced_its_weights_over_xccl_and_saved_them(chain):
    (report,) = chain["resumed"].reports  # the healed cluster's stand-in
    # the checkpoint's weights restored before any rollout, then each step's
    # after it
    left = STEPS - (chain["saved"] + 1)
    assert left >= 1
    assert [s["source"] for s in report["weight_syncs"]] == ["distributed"] * (1 + left)
    assert report["digest"] == digest_of(chain["resumed"].checkpoint)

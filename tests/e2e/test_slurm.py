"""The CPU main job through AReaL's Slurm scheduler, against a real one-machine Slurm.

docs/multi-node.md's "Slurm" commands in a fresh copy of the repository:
``standin.slurm_cluster`` (munged, slurmctld and slurmd on this machine), then
the launch with ``scheduler.type=slurm`` (2 steps, validation included). AReaL
writes and ``sbatch``-es one job script per role; the workers start under
``srun`` (the product's scheduler, ``slurm.container: native``) and the run
must end as under the other schedulers: both steps
reported, the server serving exactly the weights the actor saved. It needs
Slurm's daemons and root: `.ci/run` installs Slurm and sets
``MEMAGENT_REQUIRE_SLURM=1``, which turns a missing Slurm into a failure;
elsewhere the module is skipped, saying why.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from standin.slurm_cluster import DAEMONS
from tests.e2e.launch_runs import (
    SMALL_TRAINING,
    Launched,
    digest_of,
    fresh_clone,
)
from tests.e2e.ray_cluster import doc_command

MISSING = [d for d in DAEMONS if shutil.which(d) is None]
WHY = (
    f"Slurm is not installed ({', '.join(MISSING)} not found)"
    if MISSING
    else "slurmd needs root"
)
pytestmark = pytest.mark.skipif(
    (MISSING or os.geteuid() != 0) and os.environ.get("MEMAGENT_REQUIRE_SLURM") != "1",
    reason=f"{WHY}: apt-get install slurm-wlm munge (as root), or see .ci/run",
)
SECTION = "## Slurm"


@pytest.fixture(scope="module")
def slurm_run(needle_model_dir, tmp_path_factory):
    clone = fresh_clone(tmp_path_factory.mktemp("slurm"))
    shutil.copytree(needle_model_dir, clone / "outputs" / "cpu" / "needle_model")
    cluster = subprocess.Popen(
        doc_command("uv run python -m standin.slurm_cluster", SECTION),
        cwd=clone,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        printed = []
        for line in cluster.stdout:  # the helper gives up after its own timeout
            printed.append(line)
            if line.startswith("SLURM_CONF="):
                break
        conf = printed[-1].strip().split("=", 1)[1] if printed else ""
        assert conf.startswith("/"), "".join(printed)
        env = {
            "SLURM_CONF": conf,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        }
        cmd = [*doc_command("--config config_cpu.yaml", SECTION), *SMALL_TRAINING]
        run = Launched(cmd, clone, cwd=clone, env=env).finish()
    finally:
        cluster.terminate()
        cluster.wait(timeout=60)
    return run, Path(conf)


def logs(run) -> Path:
    return next(run.out.rglob("actor.sh")).parent


def test_the_docs_conf_path_is_the_one_the_cluster_writes(slurm_run):
    run, conf = slurm_run
    line = next(
        x for x in (run.out / "docs" / "multi-node.md").read_text().splitlines()
        if x.startswith("SLURM_CONF=")
    )  # fmt: skip
    assert run.out / line.split()[0].split("=", 1)[1] == conf


def test_the_run_ends_with_both_steps_and_the_saved_weights_served(slurm_run):
    run, _ = slurm_run
    assert [s["step"] for s in run.steps] == [1, 2]
    assert run.steps[-1]["eval_sub_em"] is not None  # the forked eval-rollout worker
    (report,) = run.reports
    assert report["digest"] == digest_of(run.checkpoint)


@pytest.mark.parametrize("role", ["actor", "rollout"])
def test_each_role_was_one_job_script_on_cpus_without_a_container(slurm_run, role):
    run, _ = slurm_run
    script = (logs(run) / f"{role}.sh").read_text()
    assert "#SBATCH --cpus-per-task=1" in script
    assert "#SBATCH --mem=2048M" in script  # actor.scheduling_spec: mem 2
    assert "--gres" not in script and "singularity" not in script
    assert re.search(r"srun --unbuffered --mpi=pmi2 .* bash -c", script)
    assert f"--role {role} " in script


def test_the_product_scheduler_ran_the_workers_natively(slurm_run):
    run, _ = slurm_run  # config_cpu.yaml's slurm.container: native
    said = "MemAgentSlurmScheduler: workers run natively (slurm.container)"
    assert said in run.log + (logs(run) / "main.log").read_text()


def test_slurm_allocated_and_ran_both_jobs(slurm_run):
    run, conf = slurm_run
    submitted = re.findall(
        r"Submitted batch job (\d+)", (logs(run) / "main.log").read_text()
    )
    assert len(submitted) == 2
    ctld = (conf.parent / "slurmctld.log").read_text()
    for job in submitted:
        assert re.search(rf"(Allocate|Started) JobId={job}\b", ctld)

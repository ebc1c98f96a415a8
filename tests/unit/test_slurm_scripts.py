"""The Slurm job scripts AReaL 1.0.4 would submit for config.yaml on 4 nodes x 8 GPUs.

No Slurm runs here (docs/multi-node.md, "Slurm"): AReaL's own `SlurmScheduler`,
built as its trainer builds it (``SlurmScheduler(exp_config=config)``), writes
each role's sbatch script, and ``sbatch`` is replaced by a stub that keeps the
script and stops there. The scripts must ask Slurm for the nodes, GPUs, CPUs
and memory of the config's layout and specs, start AReaL's RPC worker on every
GPU with the project's experiment, trial, name-resolve root and file root, and
(AReaL's default, which the docs name) run it in AReaL's Apptainer image. The
product's trainer builds `MemAgentSlurmScheduler` from the ``slurm:`` section:
the same container by default, its bind from ``slurm.container_mounts``, and
none with ``slurm.container=native`` (the CPU job's, tests/e2e/test_slurm.py).
"""

from __future__ import annotations

import re

import pytest
from areal.api.scheduler_api import Job
from areal.infra.scheduler import slurm

from memagent_workflow.infra.slurm_scheduler import MemAgentSlurmScheduler
from memagent_workflow.trainer.ppo_trainer import MemAgentPPOTrainer
from tests.unit.preflight_fakes import load

PAPER_SCALE = (
    "scheduler.type=slurm",
    "cluster.n_nodes=4",
    "rollout.backend=sglang:d16p1t1",
    "actor.backend=fsdp:d16p1t1",
)


class Submitted(Exception):
    """sbatch was called: the script is written."""


def product_scheduler(cfg):
    """The scheduler the product's trainer builds for ``cfg``."""

    class Trainer:  # only what _init_scheduler reads
        config = cfg

    return MemAgentPPOTrainer._init_scheduler(Trainer())


def scripts_of(*overrides: str, tmp) -> tuple:
    """Each role's script as the product's trainer's scheduler submits it."""
    (tmp / "root").mkdir(exist_ok=True)
    (tmp / "names").mkdir(exist_ok=True)
    cfg = load(
        "config.yaml",
        *PAPER_SCALE,
        *overrides,
        f"cluster.fileroot={tmp / 'root'}",
        f"cluster.name_resolve.nfs_record_root={tmp / 'names'}",
    )
    scripts = {}

    def sbatch(cmd, *args, **kwargs):
        assert cmd[0] == "sbatch"
        scripts[role] = open(cmd[1]).read()
        raise Submitted

    patch = pytest.MonkeyPatch()
    patch.setattr(slurm.subprocess, "check_output", sbatch)
    try:
        for role, section in (("actor", cfg.actor), ("rollout", cfg.rollout)):
            job = Job(role=role, replicas=16, tasks=list(section.scheduling_spec))
            with pytest.raises(Submitted):
                product_scheduler(cfg).create_workers(job)
    finally:
        patch.undo()
    return cfg, tmp, scripts


@pytest.fixture(scope="module")
def submitted(tmp_path_factory):
    return scripts_of(tmp=tmp_path_factory.mktemp("slurm"))


def directives(script: str) -> dict[str, str]:
    return dict(re.findall(r"^#SBATCH --([\w-]+)=(\S+)$", script, re.M))


@pytest.mark.parametrize("role", ["actor", "rollout"])
def test_each_role_asks_for_whole_nodes_of_its_gpus_and_specs(submitted, role):
    cfg, _, scripts = submitted
    spec = getattr(cfg, role).scheduling_spec[0]
    asked = directives(scripts[role])
    assert asked["nodes"] == "2" and asked["ntasks-per-node"] == "8"
    assert asked["gres"] == f"gpu:{cfg.cluster.n_gpus_per_node}"
    assert asked["cpus-per-task"] == str(spec.cpu)
    assert asked["mem"] == f"{spec.mem * 1024 * 8}M"  # 8 workers' mem on a node
    assert "srun " in scripts[role] and "--ntasks=16" in scripts[role]


def test_the_roles_fill_the_configs_nodes(submitted):
    cfg, _, scripts = submitted
    used = sum(int(directives(s)["nodes"]) for s in scripts.values())
    assert used == cfg.cluster.n_nodes


@pytest.mark.parametrize("role", ["actor", "rollout"])
def test_every_task_starts_arealss_worker_for_this_trial_on_its_gpu(submitted, role):
    cfg, tmp, scripts = submitted
    script = scripts[role]
    assert "export CUDA_VISIBLE_DEVICES=$((SLURM_LOCALID * 1))" in script
    worker = re.search(r"python3 -m areal\.infra\.rpc\.rpc_server[^']*", script)[0]
    assert f"--experiment-name {cfg.experiment_name}" in worker
    assert f"--trial-name {cfg.trial_name} --role {role}" in worker
    assert f"--nfs-record-root {tmp / 'names'}" in worker
    assert f"--fileroot {tmp / 'root'}" in worker


def test_arealss_trainer_runs_the_workers_in_arealss_apptainer_image(submitted):
    """What the docs tell users to change: the image must hold this project."""
    cfg, _, scripts = submitted
    image = cfg.actor.scheduling_spec[0].image
    for script in scripts.values():
        assert "singularity exec" in script and f" {image} bash -c" in script


def test_the_product_builds_its_slurm_scheduler_from_the_slurm_section(submitted):
    cfg, _, _ = submitted
    scheduler = product_scheduler(cfg)
    assert isinstance(scheduler, MemAgentSlurmScheduler)
    assert scheduler.container_type == cfg.slurm.container == "apptainer"
    assert scheduler.container_mounts == "/storage:/storage"  # config.yaml's


def test_slurm_container_native_runs_the_workers_without_one(tmp_path):
    _, _, scripts = scripts_of("slurm.container=native", tmp=tmp_path)
    for script in scripts.values():
        assert "singularity" not in script
        assert "python3 -m areal.infra.rpc.rpc_server" in script


def test_the_bind_comes_from_slurm_container_mounts(tmp_path):
    _, _, scripts = scripts_of("slurm.container_mounts=/data:/data", tmp=tmp_path)
    for script in scripts.values():
        assert "--bind /data:/data" in script and "--bind /storage" not in script


def test_an_unknown_container_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="slurm.container='docker'"):
        load("config.yaml", "slurm.container=docker")

"""docs/gpu-slurm.md as written: the image the build block writes is the one the
launch runs in; the launch block's exports set the shared folders, Slurm's
partition, account and time limit and NCCL's interface; shared_folders.py makes
the folders the launch names (run here, in a scratch root); the preflight and
the launch are one launch of config.yaml on 4 x 8 GPUs under AReaL's Slurm
scheduler, their shared paths under AReaL's fixed bind mount; and the container
steps CI runs are the Dockerfile's."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from examples import preflight, shared_folders
from examples.train import load_config
from tests.unit.test_slurm_scripts import PAPER_SCALE

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "gpu-slurm.md"
BIND = "/storage"  # AReaL 1.0.4 SlurmScheduler's container_mounts default


def blocks() -> list[list[str]]:
    out = []
    for block in re.findall(r"```bash\n(.*?)```", PAGE.read_text(), re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        lines = [ln.split("  #", 1)[0].strip() for ln in joined.splitlines()]
        out.append([ln for ln in lines if ln])
    return out


def exports() -> dict[str, str]:
    found = {}
    for line in blocks()[1]:
        if line.startswith("export "):
            for item in shlex.split(line)[1:]:
                key, value = item.split("=", 1)
                found[key] = value
    return found


def expand(text: str, env: dict[str, str]) -> str:
    for key in sorted(env, key=len, reverse=True):
        text = text.replace(f"${key}", env[key])
    return text


ENV = {"USER": "alice"}
SHARED = expand(exports()["SHARED"], ENV)


def command(script: str) -> list[str]:
    (line,) = [ln for ln in blocks()[1] if ln.startswith(f"python3 {script} ")]
    return shlex.split(expand(line, {**ENV, "SHARED": SHARED}))


def config_args(cmd: list[str]) -> list[str]:
    at = cmd.index("--config")
    return ["--config", str(ROOT / cmd[at + 1]), *cmd[at + 2 :]]


def test_slurm_nccl_and_shared_settings_are_exported():
    env = exports()
    assert {"SBATCH_PARTITION", "SBATCH_ACCOUNT", "SBATCH_TIMELIMIT"} <= set(env)
    assert re.fullmatch(r"\d+-\d\d:\d\d:\d\d", env["SBATCH_TIMELIMIT"])
    assert {"NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_DEBUG"} <= set(env)
    assert SHARED.startswith(f"{BIND}/") and env["HF_HOME"].startswith("$SHARED/")


def test_the_launch_is_config_yaml_on_4_x_8_gpus_in_the_built_image():
    options, rest = preflight.parse(config_args(command("examples/preflight.py")))
    assert options.shared_fs and rest == config_args(command("examples/train.py"))
    cfg = load_config(config_args(command("examples/train.py")))
    args = command("examples/train.py")
    assert all(a in args for a in PAPER_SCALE)
    assert cfg.scheduler.type == "slurm" and cfg.cluster.n_nodes == 4
    build = shlex.split(expand(blocks()[0][1], ENV))
    assert build[:2] == ["apptainer", "build"]
    assert build[-1] == "docker-daemon://" + shlex.split(blocks()[0][0])[-2].split()[0]
    assert cfg.actor.scheduling_spec[0].image == build[2]
    assert cfg.rollout.scheduling_spec[0].image == build[2]
    for path in (cfg.cluster.fileroot, cfg.cluster.name_resolve.nfs_record_root):
        assert path.startswith(f"{SHARED}/"), path  # shared, and inside the bind


def test_shared_folders_makes_the_launchs_folders(tmp_path):
    args = command("examples/shared_folders.py")
    scratch = [a.replace(BIND, str(tmp_path), 1) for a in config_args(args)]
    made = shared_folders.main(scratch)
    cfg = load_config(config_args(command("examples/train.py")))
    want = [cfg.cluster.fileroot, cfg.cluster.name_resolve.nfs_record_root]
    assert sorted(made) == sorted(p.replace(BIND, str(tmp_path), 1) for p in want)


def test_the_image_is_areals_1_0_4_plus_the_project_checked_by_install_sh():
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    steps = [ln for ln in dockerfile.splitlines() if ln and not ln.startswith("#")]
    assert steps[0] == "FROM ghcr.io/inclusionai/areal-runtime:v1.0.4-sglang"
    assert "RUN bash /opt/memagent-areal/docker/install.sh /opt/memagent-areal" in steps
    assert "ENV PYTHONPATH=/opt/memagent-areal" in steps
    build = shlex.split(blocks()[0][0])
    assert build[:4] == ["docker", "build", "-f", "docker/Dockerfile"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash docker/install.sh ." in ci  # CI runs the same steps


@pytest.mark.parametrize("name", [".venv", "outputs", ".git"])
def test_the_build_context_leaves_out_local_state(name):
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert name in ignored


def test_the_native_override_the_page_names_runs_the_workers_without_a_container():
    """The page's "Without a container" override, added to the launch, reaches
    the product's Slurm scheduler as AReaL's native container type."""
    from memagent_workflow.infra.scheduler_kinds import make_scheduler

    (override,) = set(re.findall(r"`(slurm\.container=\w+)`", PAGE.read_text()))
    args = [a for a in command("examples/train.py") if "scheduling_spec" not in a]
    cfg = load_config([*config_args(args), override])
    assert cfg.slurm.container == "native"
    scheduler = make_scheduler(cfg)
    assert type(scheduler).__name__ == "MemAgentSlurmScheduler"
    assert scheduler.container_type == "native"

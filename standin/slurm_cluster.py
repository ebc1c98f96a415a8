"""A one-machine Slurm for the CPU job: munged, slurmctld and slurmd on this host.

``python -m standin.slurm_cluster`` writes a ``slurm.conf`` for this machine
(one node: its hostname, its CPUs, 90% of its memory; consumable CPUs and
memory, so the actor's and the rollout's jobs run side by side) under
``--dir``, starts munged (unless one answers already), slurmctld and slurmd in
the foreground, prints ``SLURM_CONF=...`` once the node is idle, and stops
what it started on Ctrl-C or SIGTERM. Every Slurm command that sees that
``SLURM_CONF`` (``sbatch``, ``squeue``, ``srun``, AReaL's scheduler) uses this
cluster. It needs Debian's ``slurm-wlm`` and ``munge`` and root (slurmd runs
jobs as their users). docs/multi-node.md, "Slurm".
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

from memagent_workflow.infra.children import die_with_parent, stop_children
from standin.ray_nodes import free_port

START_TIMEOUT_S = 60.0
DAEMONS = ("munged", "slurmctld", "slurmd", "sinfo", "sbatch")


def slurm_conf(folder: Path, ctld_port: int, slurmd_port: int) -> str:
    """This machine as a one-node cluster, its files under ``folder``."""
    host = socket.gethostname()
    memory_mb = int(psutil.virtual_memory().total / 2**20 * 0.9)
    return "\n".join(
        [
            "ClusterName=memagent",
            f"SlurmctldHost={host}",
            f"SlurmctldPort={ctld_port}",
            f"SlurmdPort={slurmd_port}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={folder / 'state'}",
            f"SlurmdSpoolDir={folder / 'spool'}",
            f"SlurmctldPidFile={folder / 'slurmctld.pid'}",
            f"SlurmdPidFile={folder / 'slurmd.pid'}",
            f"SlurmctldLogFile={folder / 'slurmctld.log'}",
            f"SlurmdLogFile={folder / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            # the actor's and the rollout's jobs share the node by CPUs and memory
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU_Memory",
            "MpiDefault=none",
            "ReturnToService=2",
            f"NodeName={host} CPUs={os.cpu_count()} RealMemory={memory_mb} State=UNKNOWN",
            f"PartitionName=cpu Nodes={host} Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
    )


def munge_answers() -> bool:
    """Whether a munged already runs (a credential encodes and decodes)."""
    try:
        cred = subprocess.run(["munge", "-n"], capture_output=True, timeout=10)
        back = subprocess.run(
            ["unmunge"], input=cred.stdout, capture_output=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return cred.returncode == 0 and back.returncode == 0


def node_state(env: dict[str, str]) -> str:
    out = subprocess.run(
        ["sinfo", "-h", "-o", "%t"], env=env, capture_output=True, text=True
    )
    return out.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="outputs/slurm", help="conf, state, logs")
    args = parser.parse_args(argv)
    missing = [d for d in DAEMONS if shutil.which(d) is None]
    if missing:
        parser.error(
            f"{', '.join(missing)} not found: install Slurm and munge first "
            "(Debian/Ubuntu: apt-get install slurm-wlm munge)"
        )
    if os.geteuid() != 0:
        parser.error("slurmd must run as root (it starts jobs as their users)")
    folder = Path(args.dir).resolve()
    for sub in ("state", "spool"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    conf = folder / "slurm.conf"
    conf.write_text(slurm_conf(folder, free_port(), free_port()))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    procs: list[subprocess.Popen] = []

    def start(*cmd: str) -> None:
        log = open(folder / f"{cmd[0]}.out", "w")
        procs.append(
            subprocess.Popen(
                cmd,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )  # fmt: skip
        )

    def stopped(*_) -> None:  # Ctrl-C or SIGTERM: a clean stop, exit 0
        stop_children(procs)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stopped)
    signal.signal(signal.SIGINT, stopped)
    if not munge_answers():
        Path("/run/munge").mkdir(parents=True, exist_ok=True)
        start("munged", "--foreground", "--force")
    start("slurmctld", "-D")
    start("slurmd", "-D")
    deadline = time.monotonic() + START_TIMEOUT_S
    while node_state(env) != "idle":
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            print(f"Slurm did not start: see {folder}/*.out and *.log", flush=True)
            stop_children(procs)
            return 1
        time.sleep(1.0)
    print(f"SLURM_CONF={conf}", flush=True)
    print(f"node {socket.gethostname()}: idle, {os.cpu_count()} CPUs", flush=True)
    while all(p.poll() is None for p in procs):
        time.sleep(1.0)
    print("a Slurm daemon stopped: see its .out file", flush=True)
    stop_children(procs)
    return 1


if __name__ == "__main__":
    sys.exit(main())

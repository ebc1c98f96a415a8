"""The smoke trial's Slurm jobs, cancelled by name when a child stops.

AReaL's ``SlurmScheduler`` names each role's job ``<experiment>_<trial>:<role>``
(``_slurm_name``). A child stopped by the smoke (a deadline, a failure, a
signal) cannot cancel them itself, and Slurm keeps them running: the smoke
lists this user's jobs (``squeue``) and cancels (``scancel --name``) every one
whose name starts with one of its trials' prefixes. Without Slurm's commands
there is nothing to cancel.
"""

from __future__ import annotations

import getpass
import shutil
import subprocess
from typing import Any

from areal.utils import logging

from memagent_workflow.smoke.plan import smoke_trial

logger = logging.getLogger("MemAgentSmoke")
TIMEOUT_S = 60.0


def job_prefix(experiment: str, trial: str) -> str:
    """The start of every Slurm job name AReaL gives a trial's roles."""
    return f"{experiment}_{trial}:"


def smoke_job_prefixes(config: Any) -> list[str]:
    """The smoke's trials under Slurm (training and resume, then the eval's);
    none under another scheduler."""
    if config.scheduler.type != "slurm":
        return []
    trial = smoke_trial(config)
    return [job_prefix(config.experiment_name, t) for t in (trial, f"{trial}-eval")]


def trial_jobs(prefixes: list[str]) -> list[str]:
    """This user's queued or running Slurm jobs of those trials, by name."""
    if not prefixes or shutil.which("squeue") is None:
        return []
    out = subprocess.run(
        ["squeue", "--noheader", f"--user={getpass.getuser()}", "--format=%j"],
        capture_output=True, text=True, timeout=TIMEOUT_S,
    )  # fmt: skip
    if out.returncode != 0:
        logger.warning(f"squeue failed ({out.stderr.strip()}): no job cancelled")
        return []
    names = {line.strip() for line in out.stdout.splitlines()}
    return sorted(n for n in names if any(n.startswith(p) for p in prefixes))


def cancel_trial_jobs(prefixes: list[str]) -> list[str]:
    """Cancel those trials' jobs; their names."""
    names = trial_jobs(prefixes)
    for name in names:
        done = subprocess.run(
            ["scancel", f"--user={getpass.getuser()}", f"--name={name}"],
            capture_output=True, text=True, timeout=TIMEOUT_S,
        )  # fmt: skip
        if done.returncode != 0:
            logger.warning(f"scancel --name={name}: {done.stderr.strip()}")
    if names:
        logger.info(f"cancelled the smoke's Slurm jobs: {', '.join(names)}")
    return names

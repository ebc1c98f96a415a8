"""AReaL's Slurm scheduler, with the container made a config choice.

AReaL 1.0.4's trainer builds ``SlurmScheduler(exp_config=config)``, whose
defaults run every worker in AReaL's Apptainer image (the spec's ``image``)
with ``/storage`` bound, and no config field reaches those constructor
arguments. The ``slurm:`` section does: ``container: apptainer`` (AReaL's
default: ``singularity exec --nv`` with ``container_mounts`` bound) or
``native`` (the workers run in the environment ``sbatch`` exports from the
launching process: the project's own, as on a node without containers).

A node without GPUs (``cluster.n_gpus_per_node: 0``: CPU-only roles) counts as
one in AReaL's node arithmetic, which divides by it; workers with ``gpu: 0``
ask for no ``--gres`` either way. Job scripts, ``sbatch``, ``srun``, worker
discovery and teardown stay AReaL's.
"""

from __future__ import annotations

from typing import Any

from areal.infra import SlurmScheduler
from areal.utils import logging

logger = logging.getLogger("MemAgentSlurm")


class MemAgentSlurmScheduler(SlurmScheduler):
    """`SlurmScheduler` built from the config's ``slurm:`` section."""

    def __init__(self, *, exp_config: Any, **kwargs: Any) -> None:
        slurm = exp_config.slurm
        super().__init__(
            container_type=slurm.container,
            container_mounts=slurm.container_mounts,
            exp_config=exp_config,
            **kwargs,
        )
        bind = f", --bind {slurm.container_mounts}" if slurm.container_mounts else ""
        where = "natively" if slurm.container == "native" else f"in apptainer{bind}"
        logger.info(f"MemAgentSlurmScheduler: workers run {where} (slurm.container)")

    @property
    def n_gpus_per_node(self) -> int:
        return max(1, self._n_gpus_per_node)

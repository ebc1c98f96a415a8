"""The ``slurm:`` section: how ``scheduler.type=slurm`` runs the workers
(``infra/slurm_scheduler.py`` builds AReaL's Slurm scheduler from it)."""

from __future__ import annotations

from dataclasses import dataclass, field

CONTAINERS = ("apptainer", "native")


@dataclass
class SlurmConfig:
    """``slurm:``: how ``scheduler.type=slurm`` runs the workers."""

    container: str = field(
        default="apptainer",
        metadata={
            "help": "apptainer: each worker in the scheduling spec's image "
            "(actor.scheduling_spec[0].image; AReaL's default); native: no "
            "container, the workers run in the environment sbatch exports.",
            "choices": list(CONTAINERS),
        },
    )
    container_mounts: str | None = field(
        default="/storage:/storage",
        metadata={
            "help": "apptainer's --bind (SRC:DST[,SRC:DST...]); it must carry "
            "cluster.fileroot and the model. null: no bind."
        },
    )

    def __post_init__(self):
        if self.container not in CONTAINERS:
            raise ValueError(
                f"slurm.container={self.container!r}: choose {' or '.join(CONTAINERS)}"
            )

"""AReaL's Slurm scheduler for the CPU job: native processes, CPU-only nodes.

AReaL 1.0.4's trainer builds ``SlurmScheduler(exp_config=config)``, whose
defaults run every worker in AReaL's Apptainer image and count a node's GPUs
from ``cluster.n_gpus_per_node``. On a CPU machine neither holds: there is no
image (the workers run in the project's environment, which ``sbatch`` exports
with the rest of the submitting process's environment), and
``n_gpus_per_node: 0`` divides by zero where AReaL sizes a role's nodes.
`StandinSlurmScheduler` changes those two things and nothing else: no
container, and a node counted as holding one GPU for that arithmetic (workers
with ``gpu: 0`` then ask for no ``--gres``). The job scripts, ``sbatch``,
``srun`` (with AReaL's ``--mpi=pmi2``), worker discovery and teardown are AReaL's.
"""

from __future__ import annotations

from areal.infra import SlurmScheduler


class StandinSlurmScheduler(SlurmScheduler):
    """`SlurmScheduler` with native workers on CPU-only nodes."""

    def __init__(self, *, startup_timeout: float, exp_config) -> None:
        super().__init__(
            container_type="native",
            startup_timeout=startup_timeout,
            exp_config=exp_config,
        )

    @property
    def n_gpus_per_node(self) -> int:
        return max(1, self._n_gpus_per_node)

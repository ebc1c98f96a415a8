"""The CPU main job's entry: the product's ``examples/train.py`` with the stand-in.

    uv run python -m standin.train --config config_cpu.yaml [key=value ...]

It parses the config with `StandinGRPOConfig` (the product's config plus the
``standin:`` section) and runs ``examples.train.main`` with the stand-in's
trainer (`StandinPPOTrainer`: its actor and rollout engines) and job
(`cpu_job`: the model, the data, the folders and, in the SPMD mode, the
server), passed as arguments; the run logs the three. Everything else is the
product's own code path, as a GPU run takes it.
"""

from __future__ import annotations

import sys

from examples import train
from standin.config import StandinGRPOConfig
from standin.cpu_job import cpu_job
from standin.trainer import StandinPPOTrainer


def load_config(argv: list[str]) -> StandinGRPOConfig:
    """A stand-in training config, loaded as the product loads its own."""
    return train.load_config(argv, StandinGRPOConfig)


def main(
    argv: list[str],
    workflow: str = train.WORKFLOW,
    trainer_cls: type[StandinPPOTrainer] = StandinPPOTrainer,
) -> None:
    """``examples/train.py``'s main with the stand-in's config, trainer and job
    (``trainer_cls``: a subclass, e.g. a benchmark's timed trainer)."""
    train.main(
        argv,
        workflow,
        config_cls=StandinGRPOConfig,
        trainer_cls=trainer_cls,
        job=cpu_job,
    )


if __name__ == "__main__":
    main(sys.argv[1:])

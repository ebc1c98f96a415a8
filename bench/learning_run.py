"""``examples/train.py`` with another training workflow (the learning controls).

    uv run python -m bench.learning_run \\
        --workflow bench.controls.ShuffledMemoryAdvantageWorkflow \\
        --config config_cpu.yaml [key=value ...]

Validation still uses MemAgent's own workflow: a control changes training only.
"""

from __future__ import annotations

import sys

from examples.train import load_config, train
from standin.cpu_job import cpu_job


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[0] != "--workflow":
        sys.exit(
            "usage: python -m bench.learning_run --workflow IMPORT.PATH --config ..."
        )
    workflow, rest = argv[1], argv[2:]
    config = load_config(rest)
    if not hasattr(config, "standin"):
        sys.exit("bench.learning_run runs CPU stand-in configs only")
    with cpu_job(config):
        train(config, workflow=workflow, chance=config.standin.chance)


if __name__ == "__main__":
    main(sys.argv[1:])

"""The CPU main job (``python -m standin.train``) with another training workflow
(the learning controls).

    uv run python -m bench.learning_run \\
        --workflow bench.controls.ShuffledMemoryAdvantageWorkflow \\
        --config config_cpu.yaml [key=value ...]

Validation still uses MemAgent's own workflow: a control changes training only.
"""

from __future__ import annotations

import sys

from standin import train


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[0] != "--workflow":
        sys.exit(
            "usage: python -m bench.learning_run --workflow IMPORT.PATH --config …"
        )
    train.main(argv[2:], workflow=argv[1])


if __name__ == "__main__":
    main(sys.argv[1:])

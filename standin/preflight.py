"""The preflight of a CPU stand-in config: ``examples/preflight.py`` with the
stand-in's loaders.

    uv run python -m standin.preflight --config config_cpu.yaml [overrides ...]
    uv run python -m standin.preflight --config config_eval_cpu.yaml

The stand-in's entries build the model, write missing data and start their own
Ray instance, so the preflight does not ask for them.
"""

from __future__ import annotations

import sys

from examples import preflight

INPUTS_BY = {"train": "python -m standin.train", "eval": "python -m standin.eval"}


def loaders() -> dict[str, preflight.Loader]:
    """The stand-in entries' config loaders, by kind of run."""
    from standin import eval as standin_eval
    from standin import train as standin_train

    return {"train": standin_train.load_config, "eval": standin_eval.load_config}


def main(argv: list[str]) -> int:
    """The product's preflight on a stand-in config."""
    return preflight.main(argv, loaders=loaders(), inputs_by=INPUTS_BY)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The CPU eval entry: the product's ``examples/eval.py`` with the stand-in.

    uv run python -m standin.eval --config config_eval_cpu.yaml [key=value ...]
    uv run python -m standin.eval --config config_eval_needle.yaml actor.path=CKPT

It parses the config with `StandinEvalConfig` (the product's eval config plus
the ``standin:`` section) and runs ``examples.eval.main`` with
`StandinInference` (synthetic eval files, the tiny model, the stand-in server
in place of SGLang) passed as an argument; the run logs both.
"""

from __future__ import annotations

import sys

from examples import eval as product_eval
from standin.config import StandinEvalConfig
from standin.eval_inference import StandinInference


def load_config(argv: list[str]) -> StandinEvalConfig:
    """A stand-in eval config, loaded as the product loads its own."""
    return product_eval.load_config(argv, StandinEvalConfig)


def evaluate(config: StandinEvalConfig) -> None:
    """``examples/eval.py``'s evaluate, served by the stand-in."""
    product_eval.evaluate(config, StandinInference)


def main(argv: list[str]) -> None:
    """``examples/eval.py``'s main with the stand-in's config and inference."""
    product_eval.main(
        argv, config_cls=StandinEvalConfig, inference_cls=StandinInference
    )


if __name__ == "__main__":
    main(sys.argv[1:])

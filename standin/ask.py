"""The CPU ask entry: the product's ``examples/ask.py`` with the stand-in.

    uv run python -m standin.ask --config config_eval_needle.yaml actor.path=CKPT \\
        --document docs/needle_64.txt --question "what is the code of ann ?"

It parses the config with `StandinEvalConfig` and runs ``examples.ask.main``
with `StandinInference` (the model at ``actor.path``, the stand-in server in
place of SGLang: a test double, not an inference engine for real work).
"""

from __future__ import annotations

import sys

from examples import ask
from standin.config import StandinEvalConfig
from standin.eval_inference import StandinInference


def main(argv: list[str]) -> None:
    """``examples/ask.py``'s main with the stand-in's config and inference."""
    ask.main(argv, config_cls=StandinEvalConfig, inference_cls=StandinInference)


if __name__ == "__main__":
    main(sys.argv[1:])

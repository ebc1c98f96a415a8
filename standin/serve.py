"""The CPU serve entry: the product's ``examples/serve.py`` with the stand-in.

    uv run python -m standin.serve --config config_eval_needle.yaml actor.path=CKPT

It parses the config with `StandinServeConfig` (the service's config plus the
``standin:`` section) and runs ``examples.serve.main`` with `StandinInference`
(the model at ``actor.path``, the stand-in server in place of SGLang: a test
double, not an inference engine for real work; ``standin.server_addr`` names
one already running).
"""

from __future__ import annotations

import sys

from examples import serve
from standin.config import StandinServeConfig
from standin.eval_inference import StandinInference


def main(argv: list[str]) -> None:
    """``examples/serve.py``'s main with the stand-in's config and inference."""
    serve.main(argv, config_cls=StandinServeConfig, inference_cls=StandinInference)


if __name__ == "__main__":
    main(sys.argv[1:])

"""Check what a GPU run needs before it starts: one table, non-zero exit on any
blocking item. Nothing is started (no server, no worker).

    uv run python examples/preflight.py --config config.yaml [overrides ...]
    uv run python examples/preflight.py --config config_eval.yaml scheduler.type=local
    uv run python examples/preflight.py --config config.yaml --measured smoke.json

``--measured``: the rates ``examples/smoke.py`` measured (its JSON) in place of
the constants, for the step estimate and the run's projection in GPU-hours.

Takes the same ``--config`` and overrides as ``train.py`` (or ``eval.py``, for a
config with an ``eval:`` section, which the training config refuses), loaded by
their ``load_config``; the flags below are the preflight's own estimates and
statements. A config made for another entry is refused with that entry's
command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python examples/preflight.py` puts examples/ first
    sys.path.insert(0, str(ROOT))

from memagent_workflow.infra.config_loader import (  # noqa: E402
    ConfigError,
    exits_on_config_error,
    top_key,
)
from memagent_workflow.preflight import Options, Run, blocking, render, run_checks  # noqa: E402
from memagent_workflow.preflight.projection import projection  # noqa: E402
from memagent_workflow.preflight.rates import (  # noqa: E402
    MeasuredFileError,
    check_model,
    read_measured,
    step_rates,
)

Loader = Callable[[list[str]], Any]


def parse(argv: list[str]) -> tuple[Options, list[str]]:
    """The preflight's flags, and the rest for the config loader."""
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], allow_abbrev=False, add_help=True
    )
    p.add_argument(
        "--turn-seconds",
        type=float,
        help="seconds one turn takes under load (default: new tokens at "
        "--decode-tokens-per-s, slowed by turns queued in SGLang's KV cache)",
    )
    p.add_argument(
        "--decode-tokens-per-s",
        type=float,
        help="tokens per second one request decodes in a full batch (default: "
        "measured, else 20)",
    )
    p.add_argument(
        "--gpu-memory-gib",
        type=float,
        default=80.0,
        help="GPU size for the estimates when no GPU is visible (default 80)",
    )
    p.add_argument(
        "--download-mb-per-s",
        type=float,
        default=100.0,
        help="hub download speed for a model that is not local (default 100)",
    )
    p.add_argument(
        "--allow-download",
        action="store_true",
        help="fetch the model's config.json and tokenizer from the hub if not cached",
    )
    p.add_argument(
        "--shared-fs",
        action="store_true",
        help="state that cluster.fileroot and the name-resolve root are one file "
        "system shared by every node (several nodes)",
    )
    p.add_argument(
        "--train-tflops",
        type=float,
        help="training TFLOP/s one actor GPU achieves, for the step estimate "
        "where the actor's rates are not measured (default 120: the original's "
        "measured 7B update on H100s)",
    )
    p.add_argument(
        "--measured",
        metavar="FILE",
        help="examples/smoke.py's JSON: its measured rates replace the constants "
        "in the step estimate and the run's projection",
    )
    p.add_argument(
        "--max-rows",
        type=int,
        help="check only the first N rows of each data file (default: all)",
    )
    args, rest = p.parse_known_args(argv)
    try:
        measured = read_measured(args.measured) if args.measured else None
    except MeasuredFileError as exc:
        p.error(str(exc))
    options = Options(
        turn_seconds=args.turn_seconds,
        decode_tokens_per_s=args.decode_tokens_per_s,
        gpu_memory_gib=args.gpu_memory_gib,
        download_mb_per_s=args.download_mb_per_s,
        allow_download=args.allow_download,
        shared_fs=args.shared_fs,
        max_rows=args.max_rows,
        train_tflops=args.train_tflops,
        measured=measured,
    )
    try:
        step_rates(options)  # a flag beside the rate the file measured
    except MeasuredFileError as exc:
        p.error(str(exc))
    return options, rest


def product_loaders() -> dict[str, Loader]:
    """``train.py``'s and ``eval.py``'s config classes, by kind of run, loaded as
    they load them (a config for another entry is refused with its command)."""
    from memagent_workflow.config import MemAgentGRPOConfig
    from memagent_workflow.eval.config import MemAgentEvalConfig
    from memagent_workflow.infra.paths import load_entry_config

    return {
        kind: partial(load_entry_config, config_cls=cls, script=__file__)
        for kind, cls in (("train", MemAgentGRPOConfig), ("eval", MemAgentEvalConfig))
    }


def load(argv: list[str], loaders: Mapping[str, Loader]) -> tuple[Any, str]:
    """The config as the entry script that would run it loads it: a training
    config, unless the training loader refuses its ``eval:`` section."""
    try:
        return loaders["train"](argv), "train"
    except ConfigError as exc:  # a key the class lacks: eval's section?
        if top_key(exc) != "eval":
            raise
    return loaders["eval"](argv), "eval"


@exits_on_config_error
def main(
    argv: list[str],
    loaders: Mapping[str, Loader] | None = None,
    inputs_by: Mapping[str, str] | None = None,
) -> int:
    """Check the run; 1 on a blocking item. ``loaders``: the entry scripts'
    config loaders by kind (default: the product's); ``inputs_by``: by kind,
    what builds the model, writes missing data and starts its own Ray in
    place of a cluster (default: nothing, a cluster has them)."""
    options, rest = parse(argv)
    config, kind = load(rest, loaders or product_loaders())
    if options.measured is not None:
        try:
            check_model(options.measured, str(config.actor.path))
        except MeasuredFileError as exc:
            print(f"preflight: {exc}", file=sys.stderr)
            return 2
    run = Run(config, kind, options, inputs_by=(inputs_by or {}).get(kind))
    checks = run_checks(run)  # first: the data checks count the training rows
    if (found := projection(run)) is not None:
        print(found.step.describe(), found.describe(), sep="\n", end="\n\n")
    print(render(checks), flush=True)
    return 1 if blocking(checks) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

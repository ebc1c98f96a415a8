"""Check what a GPU run needs before it starts: one table, non-zero exit on any
blocking item. Nothing is started (no server, no worker).

    uv run python examples/preflight.py --config config.yaml [overrides ...]
    uv run python examples/preflight.py --config config_eval.yaml scheduler.type=local

Takes the same ``--config`` and overrides as ``train.py`` (or ``eval.py``, for a
config whose ``run.config`` is an eval config), loaded by their ``load_config``; the
flags below are the preflight's own estimates and statements.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python examples/preflight.py` puts examples/ first
    sys.path.insert(0, str(ROOT))

from memagent_workflow.config import config_class_name  # noqa: E402
from memagent_workflow.preflight import Options, Run, blocking, render, run_checks  # noqa: E402


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
        default=20.0,
        help="tokens per second one request decodes in a full batch (default 20)",
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
        "--max-rows",
        type=int,
        help="check only the first N rows of each data file (default: all)",
    )
    args, rest = p.parse_known_args(argv)
    options = Options(
        turn_seconds=args.turn_seconds,
        decode_tokens_per_s=args.decode_tokens_per_s,
        gpu_memory_gib=args.gpu_memory_gib,
        download_mb_per_s=args.download_mb_per_s,
        allow_download=args.allow_download,
        shared_fs=args.shared_fs,
        max_rows=args.max_rows,
    )
    return options, rest


def is_eval(argv: list[str]) -> bool:
    """Whether the file's ``run.config`` names an eval config class."""
    from areal.utils.dynamic_import import import_from_string

    from memagent_workflow.eval.config import MemAgentEvalConfig

    name = config_class_name(argv)
    cls = import_from_string(name) if name else None
    return isinstance(cls, type) and issubclass(cls, MemAgentEvalConfig)


def load(argv: list[str]) -> tuple[object, str]:
    """The config as the entry script that would run it loads it."""
    if is_eval(argv):
        from examples.eval import load_config

        return load_config(argv), "eval"
    from examples.train import load_config

    return load_config(argv), "train"


def main(argv: list[str]) -> int:
    options, rest = parse(argv)
    config, kind = load(rest)
    checks = run_checks(Run(config, kind, options))
    print(render(checks), flush=True)
    return 1 if blocking(checks) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

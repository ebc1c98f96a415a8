"""Report, download or build the RULER-HQA evaluation files ``eval_{N}.json``.

    # which files are present (exit 0 if all, 1 if some are missing)
    python examples/prepare_eval_data.py --data-root data/ruler_hqa
    # fetch the missing hub files (N = 50 ... 6400 documents); --force refetches
    python examples/prepare_eval_data.py --download [--lengths "50 200"]
    # build longer sets locally from hotpot_dev_distractor_v1.json
    python examples/prepare_eval_data.py --build 12800 25600 \\
        --source hotpot_dev_distractor_v1.json --seed 42 [--num-questions 128]

Errors print one line to stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import re
import sys

from memagent_workflow.eval import build as eval_build
from memagent_workflow.eval import sets


def _lengths(text: str) -> list[int]:
    """Parse "50 200" or "50,200" into a list of positive ints."""
    parts = [p for p in re.split(r"[\s,]+", text.strip()) if p]
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"lengths must be positive integers: {text!r}")
    return values


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n", 1)[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Without --download or --build, only report present/missing files "
        "(exit 0 if all present, 1 otherwise). Errors exit with 2.",
    )
    p.add_argument("--data-root", default="data/ruler_hqa", help="folder of eval files")
    p.add_argument(
        "--lengths",
        type=_lengths,
        default=list(sets.DEFAULT_LENGTHS),
        help='documents per sample, e.g. "50 200" or "50,200" (default: the 8 hub sets)',
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--download", action="store_true", help="fetch missing files")
    mode.add_argument(
        "--build",
        type=int,
        nargs="+",
        metavar="N",
        help="build eval_N.json locally from --source (e.g. 12800 25600)",
    )
    p.add_argument("--force", action="store_true", help="with --download: refetch all")
    p.add_argument("--repo-id", default=sets.HUB_REPO_ID, help="HF dataset repo")
    p.add_argument("--source", help="HotpotQA dev file (JSON list or JSONL)")
    p.add_argument("--seed", type=int, help="seed for --build (required with it)")
    p.add_argument("--num-questions", type=int, default=128, help="for --build")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        if args.build:
            if args.source is None or args.seed is None:
                raise sets.EvalDataError("--build needs --source and --seed")
            if any(n <= 0 for n in args.build):
                raise sets.EvalDataError("--build lengths must be positive")
            for path in eval_build.build(
                args.build, args.source, args.seed, args.data_root, args.num_questions
            ):
                print(f"wrote {path}")
            return 0
        if args.download:
            for path in sets.download(
                args.data_root, args.lengths, args.repo_id, force=args.force
            ):
                print(f"downloaded {path}")
        found = sets.status(args.data_root, args.lengths)
        print(sets.format_status(args.data_root, found))
        return 0 if all(p is not None for p in found.values()) else 1
    except (sets.EvalDataError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

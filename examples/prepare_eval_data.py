"""Report, download, expand or build the RULER-HQA evaluation files ``eval_{N}.json``.

    # which files are present (exit 0 if all, 1 if some are missing)
    python examples/prepare_eval_data.py --data-root data/ruler_hqa
    # fetch the official files the hub holds (N = 50 ... 6400, and the index-only
    # 12800 / 25600), expanding index-only ones to text with --source
    python examples/prepare_eval_data.py --download [--lengths "50 200"] \\
        [--revision COMMIT] [--source hotpot_dev_distractor_v1.json]
    # expand an index-only official file to text (other fields kept)
    python examples/prepare_eval_data.py --expand eval_25600.json \\
        --source hotpot_dev_distractor_v1.json --output data/ruler_hqa/eval_25600.json
    # build RULER-HQA-style sets for lengths the hub lacks (the official questions,
    # documents sampled locally: not official sets)
    python examples/prepare_eval_data.py --build 51200 \\
        --source hotpot_dev_distractor_v1.json --seed 42 [--indices-from FILE]
    # RULER's synthetic tasks at given token lengths (the evaluated model's
    # tokenizer), eval_{task}_{length}.json; essays / SQuAD from files you name
    python examples/prepare_eval_data.py --ruler niah_single_1,vt,fwe \
        --lengths 8192,16384 --tokenizer Qwen/Qwen2.5-7B-Instruct --output data/ruler \
        [--seed 42] [--samples 128] [--haystack FILE ...] [--hf-dataset NAME[:SPLIT]]

Errors print one line to stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from memagent_workflow.eval import build as eval_build
from memagent_workflow.eval import expand, fetch, sets


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
        epilog="Without --download, --expand or --build, only report present/missing "
        "files (exit 0 if all present, 1 otherwise). Errors exit with 2.",
    )
    p.add_argument("--data-root", default="data/ruler_hqa", help="folder of eval files")
    p.add_argument(
        "--lengths",
        type=_lengths,
        help='documents per sample, e.g. "50 200" (default: the 8 full-text hub '
        "sets; with --download also the index-only 12800 and 25600)",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--download", action="store_true", help="fetch official files")
    mode.add_argument(
        "--expand",
        type=Path,
        metavar="INDEX_ONLY.json",
        help="write --output: this file with its document indices expanded to text",
    )
    mode.add_argument(
        "--ruler",
        metavar="TASK[,TASK...]",
        help="write RULER task files eval_{task}_{length}.json ('ruler' = the "
        "paper's eleven: niah_single_1..3, niah_multikey_1..3, niah_multivalue, "
        "niah_multiquery, vt, fwe, qa_1; qa_2 too); --lengths are tokens",
    )
    mode.add_argument(
        "--build",
        type=int,
        nargs="+",
        metavar="N",
        help="build RULER-HQA-style eval_N.json from --source (e.g. 51200)",
    )
    p.add_argument("--force", action="store_true", help="with --download: refetch all")
    p.add_argument("--repo-id", default=sets.HUB_REPO_ID, help="HF dataset repo")
    p.add_argument(
        "--revision",
        default=sets.HUB_REVISION,
        help="hub branch, tag or commit to download (default: %(default)s; the "
        "commit it resolves to is printed and recorded in hub_download.json)",
    )
    p.add_argument("--source", type=Path, help="HotpotQA dev file (JSON list/JSONL)")
    p.add_argument("--output", type=Path, help="with --expand: the file to write")
    p.add_argument(
        "--seed",
        type=int,
        help="seed for --build (required with it) and --ruler (default 42)",
    )
    p.add_argument(
        "--indices-from",
        type=Path,
        help="with --build: official file whose 'index' fields give the questions "
        "(default: {data-root}/eval_200.json)",
    )
    ruler = p.add_argument_group("--ruler")
    ruler.add_argument(
        "--tokenizer", help="the evaluated model's tokenizer (path/name)"
    )
    ruler.add_argument(
        "--haystack",
        type=Path,
        action="append",
        default=[],
        help='essays (.txt or RULER\'s {"text": ...} JSON), SQuAD or HotpotQA JSON; '
        "repeatable; never downloaded",
    )
    ruler.add_argument(
        "--hf-dataset",
        action="append",
        default=[],
        metavar="NAME[:SPLIT]",
        help="a hub or local dataset holding a haystack (repeatable)",
    )
    ruler.add_argument(
        "--samples", type=int, default=128, help="samples per file (original: 128)"
    )
    ruler.add_argument(
        "--repeat-haystack",
        action="store_true",
        help="reuse a file haystack from its start when a length needs more (RULER "
        "does); without it a haystack too short is an error",
    )
    return p


def _ruler(args: argparse.Namespace) -> None:
    from memagent_workflow.eval.ruler import haystack
    from memagent_workflow.eval.ruler.generate import generate
    from memagent_workflow.eval.ruler.tasks import PAPER_LENGTHS

    if not args.tokenizer:
        raise sets.EvalDataError(
            "--ruler needs --tokenizer (lengths count the evaluated model's tokens)"
        )
    from memagent_workflow.eval.ruler.tasks import expand_names

    names = expand_names([t.strip() for t in args.ruler.split(",") if t.strip()])
    hays = [haystack.read_file(f) for f in args.haystack]
    hays += [haystack.read_hf_dataset(d) for d in args.hf_dataset]
    from transformers import AutoTokenizer

    try:  # a local folder, or the hub's cache / the hub (not re-downloaded)
        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    except Exception as exc:  # transformers raises OSError, ValueError, ...
        raise sets.EvalDataError(f"--tokenizer {args.tokenizer}: {exc}") from None
    output = args.output or Path("data/ruler")
    for path in generate(
        tokenizer,
        names,
        args.lengths or list(PAPER_LENGTHS),
        output,
        args.seed if args.seed is not None else 42,
        args.samples,
        hays,
        args.repeat_haystack,
    ):
        print(f"wrote {path}")


def _download(args: argparse.Namespace) -> None:
    lengths = args.lengths or list(sets.OFFICIAL_LENGTHS)
    r = fetch.download(
        args.data_root, lengths, args.repo_id, args.revision, args.force, args.source
    )
    print(f"dataset {r['repo_id']} at revision {r['revision']} = commit {r['commit']}")
    for path in r["written"]:
        kind = "index-only" if path in r["index_only"] else "text"
        print(f"downloaded {path} ({kind})")
    for path in r["skipped"]:
        print(f"kept {path} (present; --force refetches)")
    for path in r["index_only"]:
        print(
            f"{path} holds document indices: expand it with --expand {path} "
            f"--source hotpot_dev_distractor_v1.json --output {path}"
        )
    if r["not_on_hub"]:
        names = ", ".join(f"eval_{n}.json" for n in r["not_on_hub"])
        print(
            f"not on the hub at this commit: {names} (--build makes RULER-HQA-style "
            "sets, not official ones)"
        )


def _build(args: argparse.Namespace) -> None:
    if args.source is None or args.seed is None:
        raise sets.EvalDataError("--build needs --source and --seed")
    if any(n <= 0 for n in args.build):
        raise sets.EvalDataError("--build lengths must be positive")
    indices_from = args.indices_from or sets.eval_file(args.data_root, 200)
    if not Path(indices_from).exists():
        raise sets.EvalDataError(
            f"{indices_from}: not found; --build takes its questions from an official "
            "file's 'index' fields: download one (--download --lengths 200) or pass "
            "--indices-from"
        )
    indices = eval_build.official_indices(indices_from)
    for path in eval_build.build(
        args.build, args.source, args.seed, args.data_root, indices
    ):
        print(
            f"wrote {path}: {sets.BUILT_SET} (the {len(indices)} official questions of "
            f"{indices_from}, documents sampled here with seed {args.seed}; not an "
            "official set)"
        )


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        if args.ruler:
            _ruler(args)
            return 0
        if args.build:
            _build(args)
            return 0
        if args.expand:
            if args.source is None or args.output is None:
                raise sets.EvalDataError("--expand needs --source and --output")
            count = expand.expand_file(args.expand, args.source, args.output)
            print(f"wrote {args.output}: {count} samples, contexts as text")
            return 0
        if args.download:
            _download(args)
        default = sets.OFFICIAL_LENGTHS if args.download else sets.DEFAULT_LENGTHS
        found = fetch.status(args.data_root, args.lengths or default)
        print(fetch.format_status(args.data_root, found))
        return 0 if all(p is not None for p in found.values()) else 1
    except (sets.EvalDataError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

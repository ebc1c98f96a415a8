"""Write MemAgent training / validation data as JSONL.

Each output line is ``{"id", "question", "context", "answers"}``. Sources:

    # the MemAgent HotpotQA release on the Hugging Face hub
    python examples/prepare_data.py --hf-dataset BytedTsinghua-SIA/hotpotqa \\
        --hf-split train --output data/hotpotqa_train.jsonl
    python examples/prepare_data.py --hf-dataset BytedTsinghua-SIA/hotpotqa \\
        --hf-split dev --output data/hotpotqa_dev.jsonl
    # a local parquet / JSONL / JSON file (MemAgent, RULER-HQA eval or converted rows)
    python examples/prepare_data.py --input hotpotqa_dev.parquet --output data/dev.jsonl
    # a small deterministic two-hop dataset for CPU runs and tests
    python examples/prepare_data.py --synthetic 64 --seed 0 --output data/synthetic.jsonl
    # the needle task a tiny model learns on CPU (config_cpu.yaml): training
    # questions, and held-out ones (another seed; every code asked equally often)
    python examples/prepare_data.py --synthetic 1024 --task needle --chunks 2 \
        --output data/needle_train.jsonl
    python examples/prepare_data.py --synthetic 64 --task needle --chunks 2 \
        --split valid --seed 1 --output data/needle_valid.jsonl

Exit codes: 0 on success, 2 for bad arguments or bad data (the message names
the file, row and field), 1 when the Hugging Face hub cannot be used. The output
file is replaced only when every row converted. This script does not import
areal, so it starts in well under a second.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from memagent_workflow.data import hub
from memagent_workflow.data.files import DataError, write_jsonl
from memagent_workflow.data.synthetic import make_needle, make_synthetic
from memagent_workflow.data.training import training_rows


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Convert MemAgent QA data to {id, question, context, answers} JSONL."
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--input", type=Path, help="local .parquet, .jsonl or .json file"
    )
    source.add_argument(
        "--hf-dataset", help="hub dataset id, e.g. BytedTsinghua-SIA/hotpotqa"
    )
    source.add_argument(
        "--synthetic", type=int, metavar="N", help="generate N synthetic samples"
    )
    p.add_argument(
        "--hf-split",
        default="train",
        help="use the one hub file whose name holds this word (default: train); "
        "several matching files are an error",
    )
    p.add_argument("--hf-file", help="use this hub file instead of --hf-split's")
    p.add_argument("--hf-revision", help="hub branch, tag or commit (default: main)")
    p.add_argument("--output", type=Path, required=True, help="output .jsonl file")
    p.add_argument("--limit", type=int, help="keep only the first N rows")
    p.add_argument("--seed", type=int, default=0, help="seed for --synthetic")
    p.add_argument(
        "--task",
        choices=("two_hop", "needle"),
        default="two_hop",
        help="--synthetic task: HotpotQA-shaped two-hop questions, or the needle "
        "task a tiny model can learn (memagent_workflow/data/synthetic.py)",
    )
    p.add_argument(
        "--num-docs", type=int, default=20, help="documents per two_hop context"
    )
    p.add_argument(
        "--chunks", type=int, default=1, help="sentences (chunks) per needle context"
    )
    p.add_argument(
        "--distractors",
        action="store_true",
        help="needle: other names' codes instead of filler sentences",
    )
    p.add_argument(
        "--split",
        choices=("train", "valid"),
        default="train",
        help="needle: training rows, or held-out rows (every code asked equally often)",
    )
    return p


def _progress(rows: Iterable, desc: str) -> Iterator:
    """Row counter on stderr (tqdm; silent when stderr is not a terminal)."""
    try:
        from tqdm import tqdm
    except ImportError:
        yield from rows
        return
    yield from tqdm(rows, desc=desc, unit=" rows", file=sys.stderr, disable=None)


def _converted_rows(args: argparse.Namespace) -> Iterator[dict]:
    if args.synthetic is not None and args.task == "needle":
        yield from make_needle(
            args.synthetic, args.seed, args.chunks, args.distractors, args.split
        )
        return
    if args.synthetic is not None:
        yield from make_synthetic(args.synthetic, args.seed, args.num_docs)
        return
    if args.input is not None:
        path = args.input
    elif args.hf_file:
        path = hub.download_file(
            args.hf_dataset, args.hf_file, revision=args.hf_revision
        )
    else:
        path = hub.download_split(args.hf_dataset, args.hf_split, args.hf_revision)
        print(
            f"--hf-split {args.hf_split}: using {path.name} of {args.hf_dataset}",
            file=sys.stderr,
        )
    print(f"reading {path}", file=sys.stderr)
    yield from training_rows([path], progress=_progress)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.output.suffix != ".jsonl":
        parser.error(f"--output must end in .jsonl, got {args.output}")
    for name in ("limit", "synthetic"):
        value = getattr(args, name)
        if value is not None and value < 0:
            parser.error(f"--{name} must be >= 0, got {value}")
    if args.synthetic is not None and args.num_docs < 2:
        parser.error(f"--num-docs must be >= 2, got {args.num_docs}")
    if args.chunks < 1:
        parser.error(f"--chunks must be >= 1, got {args.chunks}")
    rows = itertools.islice(_converted_rows(args), args.limit)
    try:
        count = write_jsonl(args.output, rows)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except hub.HubError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {count} rows to {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

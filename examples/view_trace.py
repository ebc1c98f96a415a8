"""The memory traces of an eval run as one page a person reads.

    uv run python examples/view_trace.py RESULTS_DIR [--out FILE] [--max-samples N]

Reads the ``*.trace.jsonl`` files ``examples/eval.py`` writes with ``eval.trace``
(on by default) and writes ``RESULTS_DIR/trace.html``: the caught / kept /
answered split per length, then each sample's memory turn by turn. The page is
one file with no network at view time; eval.py writes it too at the end of a run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memagent_workflow.eval.trace_page import MAX_SAMPLES, has_traces, write_page


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", type=Path, help="an eval.output_dir")
    parser.add_argument("--out", type=Path, help="the page (default: trace.html in it)")
    parser.add_argument("--max-samples", type=int, default=MAX_SAMPLES)
    args = parser.parse_args(argv)
    if not args.results_dir.is_dir():
        print(f"view_trace: {args.results_dir} is not a folder", file=sys.stderr)
        return 2
    if not has_traces(args.results_dir):
        print(
            f"view_trace: no *.trace.jsonl in {args.results_dir} (run the eval "
            "with eval.trace=true, the default, in MemAgent mode)",
            file=sys.stderr,
        )
        return 2
    print(write_page(args.results_dir, args.out, args.max_samples))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

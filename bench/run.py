"""Run the benchmarks and write ``bench/results/*.json`` and ``bench/results.md``.

uv run python bench/run.py                 # everything (12-17 min on 2 cores)
uv run python bench/run.py --smoke         # toy sizes (~1 min), no targets
uv run python bench/run.py --only loop     # one benchmark, report refreshed

A new loop result moves the one it replaces to ``loop.previous.json``; the
report compares the two (reproducibility).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = {
    "overhead": "bench.overhead",
    "async": "bench.async_vs_lockstep",
    "replay": "bench.replay",
    "loop": "bench.loop",
    "scaling": "bench.scaling",
    "learning": "bench.learning",
    "actor": "bench.actor",
    "length": "bench.length",
    "serve": "bench.serve",
    "serve_faults": "bench.serve_faults",
}
# Not in a --smoke run of everything: their toy versions cost minutes, and
# tests/e2e/test_learning.py runs the same train_run path for real.
NOT_IN_SMOKE = ("learning", "actor", "length", "serve", "serve_faults")
RESULT_NAMES = {
    "overhead": "overhead",
    "async": "async_vs_lockstep",
    "replay": "replay",
    "loop": "loop",
    "scaling": "scaling",
    "learning": "learning",
    "actor": "actor",
    "length": "length",
    "serve": "serve",
    "serve_faults": "serve_faults",
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="toy sizes (CI)")
    p.add_argument(
        "--only",
        choices=sorted(BENCHMARKS),
        action="append",
        help="run only this benchmark (repeatable)",
    )
    p.add_argument("--out", type=Path, help="results folder (JSON files)")
    p.add_argument("--md", type=Path, help="where to write the Markdown report")
    args = p.parse_args(argv)
    if args.out is None:
        args.out = (
            REPO / "bench" / (".cache/smoke-results" if args.smoke else "results")
        )
    if args.md is None:
        args.md = (
            args.out / "results.md" if args.smoke else REPO / "bench" / "results.md"
        )
    return args


def main(argv: list[str] | None = None) -> list[Path]:
    """Run the chosen benchmarks; returns the files written."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))  # `python bench/run.py` from anywhere
    import importlib

    from bench.common import MachineLoad, write_result
    from bench.report import PREVIOUS, write_report

    args = parse_args(argv)
    written = []
    keys = args.only or [
        k for k in BENCHMARKS if not (args.smoke and k in NOT_IN_SMOKE)
    ]
    for key in keys:
        module = importlib.import_module(BENCHMARKS[key])
        load = MachineLoad()
        print(f"[bench] {key}{' (smoke)' if args.smoke else ''} ...", flush=True)
        result = module.run(smoke=args.smoke)
        result.update(load.done(result.get("workers_cpu_s", 0.0)))
        name = RESULT_NAMES[key]
        if key == "loop" and (args.out / f"{name}.json").exists():
            (args.out / f"{name}.json").replace(args.out / PREVIOUS)
        path = write_result(args.out, name, result)
        written.append(path)
        for t in result["targets"]:
            status = {True: "PASS", False: "MISS", None: "info"}[t["pass"]]
            print(f"[bench]   {status:4} {t['metric']}: {t['measured']}", flush=True)
        print(f"[bench]   wrote {path} ({result['bench_wall_s']:.0f} s)", flush=True)
    written.append(write_report(args.out, args.md))
    print(f"[bench] wrote {args.md}", flush=True)
    return written


if __name__ == "__main__":
    main()

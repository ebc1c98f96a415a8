"""LoRA on the CPU main job: docs/lora.md's command over seeds, against full-parameter.

Each run is ``python -m standin.train --config config_cpu.yaml`` with the
overrides of docs/lora.md's command (AReaL's FSDP actor trains a PEFT adapter;
every step's adapter is pushed to the stand-in and serves the next rollouts),
then the job's own length eval (the adapter merged into the warm start, through
``examples/eval.py``). Seeds as bench/learning.py's: ``standin.seed=s`` builds
the model and data, AReaL and the server get ``seed=s+1``. One run at a time;
``--full`` drops the LoRA overrides (the full-parameter baseline, same mode).
Peak memory is the largest sum of RSS over the run's processes (trainer,
workers, server), sampled every 0.5 s.

    uv run python bench/lora.py --seeds 0 1 2 [--full] [-- key=value ...]
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from bench.learning import CHANCE, REPO, build_model, summarise, train_run

DOCS = REPO / "docs" / "lora.md"
HEAD = "uv run python -m standin.train --config config_cpu.yaml "


def lora_overrides(docs: Path = DOCS) -> list[str]:
    """The overrides of docs/lora.md's CPU LoRA command (its one line)."""
    lines = docs.read_text().splitlines()
    line = next(x for x in lines if x.startswith(HEAD) and "use_lora" in x)
    return shlex.split(line[len(HEAD) :])


class PeakRSS:
    """The largest total RSS of this process's children, sampled in a thread."""

    def __init__(self, every_s: float = 0.5) -> None:
        self.peak, self.every_s = 0, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(self.every_s):
            total = 0
            for p in me.children(recursive=True):
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def trainable(log: str) -> str | None:
    """PEFT's "trainable params: ... || all params: ..." line of the run's log."""
    m = re.search(r"trainable params: [\d,]+ \|\| all params: [\d,]+ \|\| [^\n]*", log)
    return m.group(0) if m else None


def one_run(work: Path, seed: int, overrides: list[str]) -> dict[str, Any]:
    model = build_model(work / f"model-s{seed}", seed)
    folder = work / f"seed-{seed}"
    with PeakRSS() as rss:
        run = train_run(
            folder, model, seed, seed + 1, overrides=tuple(overrides), timeout=3600
        )
    table_file = next((folder / "areal").rglob("length_table.json"), None)
    steps = run["steps"]
    return {
        **summarise(f"seed {seed}", seed, run),
        "curve": [
            (s["step"], s["eval_reward"])
            for s in steps
            if s.get("eval_reward") is not None
        ],
        "training_s": round(steps[-1].get("elapsed_s", 0.0), 1) if steps else None,
        "peak_rss_mib": round(rss.peak / 2**20),
        "trainable": trainable((folder / "log.txt").read_text(errors="replace")),
        "length_table": json.loads(table_file.read_text()) if table_file else None,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--full", action="store_true", help="full-parameter baseline")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("overrides", nargs="*", help="more config overrides (key=value)")
    args = ap.parse_args(argv)
    name = "full" if args.full else "lora"
    work = args.out or REPO / "outputs" / "bench" / name
    overrides = ([] if args.full else lora_overrides()) + args.overrides
    results = {"overrides": overrides, "chance": CHANCE, "runs": []}
    for seed in args.seeds:
        print(f"[bench] {name}: seed {seed} ...", flush=True)
        start = time.perf_counter()
        r = one_run(work, seed, overrides)
        results["runs"].append(r)
        print(
            f"[bench] seed {seed}: held-out {r['curve']}, {r['training_s']} s of "
            f"training, {time.perf_counter() - start:.0f} s in all, peak "
            f"{r['peak_rss_mib']} MiB",
            flush=True,
        )
        (work / "results.json").write_text(json.dumps(results, indent=1))
    print(f"[bench] wrote {work / 'results.json'}")


if __name__ == "__main__":
    main()

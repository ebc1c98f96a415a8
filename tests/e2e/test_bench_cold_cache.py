"""The loop benchmark from a cold cache, as on a fresh clone.

`bench/run.py --only loop` runs each mix and ratio in its own worker process;
on a fresh clone every worker finds the benchmark tokenizer missing at the
same moment (it used to fail there: one worker deleted the folder another was
writing). Here two workers (the smoke sizes at two ratios) start in a fresh
interpreter whose cache (``BENCH_CACHE_DIR``) is an empty folder: one builds
the tokenizer, the other waits for it, and both finish.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

RUN_TWO_WORKERS = """
import json, sys
from dataclasses import replace
from bench import loop

cfg = replace(loop.SMOKE, ratios=(3.0, 1.0))
result = loop.run(smoke=True, cfg=cfg, parallel=True)
with open(sys.argv[1], "w") as f:
    json.dump(result, f)
"""


def test_the_multi_process_loop_benchmark_runs_from_a_cold_cache(tmp_path):
    cache = tmp_path / "cache"
    out = tmp_path / "loop.json"
    env = {**os.environ, "BENCH_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", RUN_TWO_WORKERS, str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-6000:]
    result = json.loads(out.read_text())
    assert sorted(row["ratio"] for row in result["rows"]) == [1.0, 3.0]
    assert result["workers_cpu_s"] > 0  # the rows came from worker processes
    built = [p for p in cache.iterdir() if not p.name.startswith(".")]
    assert len(built) == 1 and built[0].name.startswith("bpe32000-")
    assert (built[0] / "tokenizer.json").is_file()
    assert not list(cache.glob(".*.building"))
    assert log.count("Building the benchmark tokenizer") == 1, log[-6000:]

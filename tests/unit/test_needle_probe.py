"""docs/learning-length.md's probe command runs (shortened: the flags it shows all parse)."""

import ast
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_documented_probe_command_warms_trains_and_reports():
    text = (ROOT / "docs" / "learning-length.md").read_text()
    command = re.search(r"`(uv run\s+python bench/needle_probe\.py[^`]*)`", text)
    argv = shlex.split(command.group(1))
    assert argv[:3] == ["uv", "run", "python"]
    # The documented flags, then sizes small enough for a unit test (argparse
    # keeps the last value of a repeated flag).
    quick = ["--warm-steps", "20", "--steps", "10", "--eval-chunks", "1,3"]
    proc = subprocess.run(
        [sys.executable, *argv[3:], *quick],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("warm start loss ")
    for label, line in zip(("warm start", "step 10"), lines[1:], strict=True):
        assert line.startswith(label)
        acc = ast.literal_eval(
            re.search(r"accuracy by chunks (\{.*?\})", line).group(1)
        )
        assert sorted(acc) == [1, 3] and all(0 <= a <= 1 for a in acc.values())

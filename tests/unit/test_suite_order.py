"""The suite's tiers and start order (tests/tiers.py, tests/conftest.py)."""

import subprocess
import sys
from pathlib import Path

from tests.tiers import FULL_TIER, LONGEST_FIRST, left_out, start_order

TESTS = Path(__file__).resolve().parents[1]
FOUND = [p.name for p in TESTS.rglob("test_*.py")]


def test_every_file_named_exists_once():
    # a renamed file would silently start last, or leave the full tier for the quick
    assert len(set(FOUND)) == len(FOUND)  # the tiers name files by their names
    for names in (LONGEST_FIRST, FULL_TIER):
        assert set(names) <= set(FOUND), set(names) - set(FOUND)
        assert len(set(names)) == len(names)


def test_the_builder_starts_first_then_what_does_not_wait_for_it():
    files = ["test_a.py", "test_serve.py", "test_b.py", "test_learning.py", "test_c.py"]
    users = {"test_serve.py", "test_learning.py", "test_c.py"}
    # the longest user builds; the users after it would sit idle on the build
    order = start_order(files, users)
    assert order == [
        "test_learning.py",
        "test_a.py",
        "test_b.py",
        "test_serve.py",
        "test_c.py",
    ]
    assert start_order(files[:3], {"test_serve.py"})[0] == "test_serve.py"
    assert start_order(["test_a.py", "test_b.py"], set()) == ["test_a.py", "test_b.py"]


def test_the_full_tier_is_left_out_unless_asked_for():
    files = ["test_learning.py", "test_eval.py", "test_slurm.py"]
    assert left_out(files, "", set()) == {"test_learning.py", "test_slurm.py"}
    assert left_out(files, "full", set()) == set()  # -m full: pytest selects
    assert left_out(files, "", {"test_slurm.py"}) == {"test_learning.py"}  # named


def collected(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n0", *args],
        cwd=TESTS.parent, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return {
        Path(line.split("::")[0]).name
        for line in done.stdout.splitlines()
        if "::" in line
    }


def test_the_readme_command_runs_the_quick_tier_and_ci_the_full_one_too():
    quick, full = collected("tests/e2e"), collected("tests/e2e", "-m", "full")
    e2e = {p.name for p in (TESTS / "e2e").glob("test_*.py")}
    assert full == set(FULL_TIER) & e2e and quick == e2e - full
    assert quick >= {
        "test_train_cpu.py",
        "test_eval.py",
        "test_serve.py",
        "test_ask.py",
    }

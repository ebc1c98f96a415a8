"""The README's test command starts the longest test files first (tests/conftest.py)."""

from pathlib import Path

from tests.conftest import LONGEST_FIRST

TESTS = Path(__file__).resolve().parents[1]


def test_every_file_started_first_exists():
    # a renamed file would silently start last, and the suite take longer
    found = {p.name for p in TESTS.rglob("test_*.py")}
    assert set(LONGEST_FIRST) <= found, set(LONGEST_FIRST) - found
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)

"""The README's test command starts the longest test files first (tests/conftest.py)."""

from pathlib import Path

from tests.conftest import LONGEST_FIRST, NEEDLE_FREE

TESTS = Path(__file__).resolve().parents[1]


def test_every_file_started_first_exists():
    # a renamed file would silently start last, and the suite take longer
    found = {p.name for p in TESTS.rglob("test_*.py")}
    assert set(LONGEST_FIRST) <= found, set(LONGEST_FIRST) - found
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)


def test_the_files_started_beside_the_needle_build_do_not_wait_for_it():
    # the first file builds the needle model; the next ones (on the other
    # workers) would sit idle until it is done if they used it too
    assert "needle_model_dir" in (TESTS / "e2e" / LONGEST_FIRST[0]).read_text()
    assert NEEDLE_FREE >= 2  # at least one for each other worker of a 2-core run
    for name in LONGEST_FIRST[1 : 1 + NEEDLE_FREE]:
        assert "needle_model_dir" not in next(TESTS.rglob(name)).read_text(), name

"""The suite's tiers and start order (tests/tiers.py, tests/conftest.py)."""

from pathlib import Path

import pytest

from tests.tiers import FULL_COMMAND, FULL_TIER, LONGEST_FIRST, left_out, start_order

pytest_plugins = ("pytester",)

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


def test_files_that_run_alone_start_last():
    files = ["test_smoke.py", "test_a.py", "test_learning.py", "test_b.py"]
    order = start_order(files, {"test_learning.py"}, frozenset({"test_smoke.py"}))
    # started early, it would hold every worker until the files in flight ended
    assert order == ["test_learning.py", "test_a.py", "test_b.py", "test_smoke.py"]


def test_the_full_tier_is_left_out_unless_asked_for():
    files = ["test_learning.py", "test_eval.py", "test_slurm.py"]
    assert left_out(files, "", set()) == {"test_learning.py", "test_slurm.py"}
    assert left_out(files, "full", set()) == set()  # -m full: pytest selects
    assert left_out(files, "", {"test_slurm.py"}) == {"test_learning.py"}  # named


def collected(pytester: pytest.Pytester, *args: str) -> tuple[set[str], str]:
    """The files a run of tests/conftest.py's hooks over ``TIERED`` collects, and
    what it prints."""
    done = pytester.runpytest_inprocess("--collect-only", "-q", "-p", "no:xdist", *args)
    names = {line.split("::")[0] for line in done.outlines if "::" in line}
    return names, done.stdout.str()


TIERED = ("test_learning.py", "test_slurm.py", "test_eval.py", "test_serve.py")


def test_the_readme_command_runs_the_quick_tier_and_ci_the_full_one_too(pytester):
    pytester.makeconftest(
        "from tests.conftest import pytest_collection_modifyitems, "
        "pytest_terminal_summary  # noqa: F401"
    )
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\nmarkers =\n    full: the full tier\n"
    )
    pytester.makepyfile(**{name[:-3]: "def test_it(): pass" for name in TIERED})
    quick, said = collected(pytester)
    assert quick == {"test_eval.py", "test_serve.py"}
    assert f"CI runs it: {FULL_COMMAND}" in said
    full, said = collected(pytester, "-m", "full")
    assert full == {"test_learning.py", "test_slurm.py"} and "left out" not in said
    assert collected(pytester, "test_slurm.py")[0] == {"test_slurm.py"}  # named: runs


def test_the_builds_go_where_ci_keeps_them_for_both_tiers(
    tmp_path_factory, tmp_path, monkeypatch
):
    from tests.conftest import shared_dir

    monkeypatch.delenv("MEMAGENT_TEST_BUILDS", raising=False)
    own = shared_dir(tmp_path_factory, "needle_model")
    assert own.parent in (
        tmp_path_factory.getbasetemp(),
        tmp_path_factory.getbasetemp().parent,
    )
    # .ci/run's folder: the full tier's session finds the quick tier's builds
    monkeypatch.setenv("MEMAGENT_TEST_BUILDS", str(tmp_path))
    assert shared_dir(tmp_path_factory, "needle_model") == tmp_path / "needle_model"
    ci = (TESTS.parent / ".ci" / "run").read_text()
    assert ci.index('export MEMAGENT_TEST_BUILDS="$PWD/.ci/builds"') < ci.index(
        FULL_COMMAND
    )


def test_the_collection_starts_a_file_that_sets_runs_alone_last(pytester):
    pytester.makeconftest(
        "from tests.conftest import pytest_collection_modifyitems  # noqa: F401"
    )
    pytester.makepyfile(
        test_a="RUNS_ALONE = True\ndef test_it(): pass",
        test_b="def test_it(): pass",
        test_c="def test_it(): pass",
    )
    done = pytester.runpytest_inprocess("--collect-only", "-q", "-p", "no:xdist")
    order = [line.split("::")[0] for line in done.outlines if "::" in line]
    assert order == ["test_b.py", "test_c.py", "test_a.py"]

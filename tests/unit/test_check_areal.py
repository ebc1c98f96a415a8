"""tests/check_areal.py: its tier table counts what pytest reported, and bad
arguments stop it before anything is built (docs/areal-versions.md)."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests import check_areal

ROOT = Path(__file__).resolve().parents[2]


def test_the_table_counts_each_outcome_of_a_real_junit_report(tmp_path):
    (tmp_path / "test_three.py").write_text(
        "import pytest\n"
        "def test_ok(): pass\n"
        "def test_bad(): assert False\n"
        "@pytest.mark.skip(reason='x')\n"
        "def test_skipped(): pass\n"
        "@pytest.fixture\n"
        "def broken(): raise RuntimeError\n"
        "def test_error(broken): pass\n"
    )
    report = tmp_path / "r.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n0", "-p", "no:cacheprovider",
         f"--junitxml={report}", str(tmp_path / "test_three.py")],
        cwd=tmp_path, capture_output=True,
    )  # fmt: skip
    assert check_areal.counts(report) == {"passed": 1, "failed": 2, "skipped": 1}
    assert check_areal.counts(tmp_path / "none.xml") == dict.fromkeys(
        ("passed", "failed", "skipped"), 0
    )


def test_every_tier_names_files_that_exist():
    for name, paths in check_areal.TIERS.items():
        for path in paths:
            assert (ROOT / path).exists(), (name, path)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--areal", "1.0.4", "--tiers", "unit,gpu"], "unknown ['gpu']"),
        (["--areal", "no/such/tree"], "neither a folder nor a release number"),
    ],
)
def test_bad_arguments_stop_before_building(argv, message, capsys, monkeypatch):
    built = []
    monkeypatch.setattr(check_areal, "run", lambda cmd, **kw: built.append(cmd))
    with pytest.raises(SystemExit):
        check_areal.main(argv)
    out = capsys.readouterr()
    assert message in out.err + out.out
    assert not [cmd for cmd in built if "venv" in cmd]

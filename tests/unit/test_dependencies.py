"""Dependencies by role: the wheel declares exactly what the product imports;
what only the stand-in or the benchmarks import sits in their dependency groups,
which `uv run` installs by default (so the README's two commands need no more)."""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
FIRST_PARTY = {"memagent_workflow", "standin", "bench", "examples", "tests"}


def names(requirements: list[str]) -> set[str]:
    return {Requirement(r).name.lower().replace("_", "-") for r in requirements}


def imported_distributions(*folders: str) -> set[str]:
    """Distributions of the third-party modules imported under ``folders``."""
    modules: set[str] = set()
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    modules |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    modules.add(node.module.split(".")[0])
    modules -= FIRST_PARTY | set(sys.stdlib_module_names)
    dists = packages_distributions()
    return {d.lower().replace("_", "-") for m in modules for d in dists.get(m, [m])}


PRODUCT = imported_distributions("memagent_workflow", "examples")


def test_the_wheel_declares_exactly_what_the_product_imports():
    declared = names(PYPROJECT["project"]["dependencies"])
    assert PRODUCT - declared == set(), "imported by the product, not declared"
    assert declared - PRODUCT == set(), "declared, not imported by the product"


@pytest.mark.parametrize("folder", ["standin", "bench"])
def test_the_stand_in_and_the_benchmarks_carry_their_own_needs(folder):
    group = names(PYPROJECT["dependency-groups"][folder])
    assert imported_distributions(folder) - PRODUCT == group


def test_uv_run_installs_those_groups():
    assert {"dev", "standin", "bench"} <= set(PYPROJECT["tool"]["uv"]["default-groups"])


def test_what_the_tests_import_is_declared():
    # e.g. websocket-client, tests/browser.py's DevTools client
    groups = PYPROJECT["dependency-groups"]
    declared = set().union(*(names(groups[g]) for g in ("dev", "standin", "bench")))
    assert imported_distributions("tests") - PRODUCT - declared == set()

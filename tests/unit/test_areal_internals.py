"""AReaL's private internals the project relies on are unchanged and all listed.

The list itself, each entry with why, is ``memagent_workflow/areal_internals/pinned.py``;
the code of later AReaL commits, read again, is in ``areal_internals/revised.py``.
"""

from __future__ import annotations

from dataclasses import replace

import areal
import pytest

from memagent_workflow.areal_internals.pinned import (
    LOCKED,
    PRIVATE,
    SUBCLASSES,
    load,
)
from memagent_workflow.areal_internals.revised import MAIN, REVISED, TAG


@pytest.mark.parametrize("entry", PRIVATE, ids=[p.name for p in PRIVATE])
def test_what_the_project_relies_on_is_unchanged(entry):
    problem = entry.unreviewed(areal.__version__)
    assert problem is None, problem


def test_a_revised_digest_applies_to_its_release_only():
    revised = [p for p in PRIVATE if p.revised]
    assert revised  # the v2.0.0 tag changed three of them, AReaL main eight
    assert set(REVISED) <= {p.name for p in PRIVATE}  # no stray revisions
    for entry in revised:
        for r in entry.revised:
            assert r.areal != LOCKED and r.sha256 != entry.sha256 and r.change
            assert r.commit in (TAG, MAIN) and r.sha256 in entry.pinned(r.areal)
        assert entry.pinned(LOCKED) == (entry.sha256,)
        assert entry.pinned("9.9.9") == (entry.sha256,)  # unreviewed: 1.0.4's


def test_one_release_accepts_the_code_of_each_commit_read_for_it():
    init = next(p for p in PRIVATE if p.name.endswith("PPOTrainer.__init__"))
    commits = [r.commit for r in init.reviews("2.0.0")]
    assert [c.split()[0] for c in commits] == ["a0f3dca2", "fee938ea", "cbff54d6"]
    # On main the body moved to _init_impl: that commit's digest covers both.
    assert init.reviews("2.0.0")[-1].code[-1].endswith("PPOTrainer._init_impl")


def test_an_unknown_digest_fails_naming_the_function_and_the_commits(monkeypatch):
    init = next(p for p in PRIVATE if p.name.endswith("PPOTrainer.__init__"))
    unknown = "0" * 64
    monkeypatch.setitem(
        REVISED, init.name, tuple(replace(r, sha256=unknown) for r in init.revised)
    )
    entry = replace(init, sha256=unknown)
    assert entry.reviewed("2.0.0") is None
    problem = entry.unreviewed("2.0.0")
    assert init.name in problem and "__init__ + _init_impl" in problem
    for commit in ("a0f3dca2", "fee938ea", "cbff54d6"):
        assert commit in problem


def areal_private_overrides(cls) -> set[str]:
    """``module:Class.method`` of each AReaL private method ``cls`` overrides."""
    found = set()
    for name, value in vars(cls).items():
        if not callable(value) and not isinstance(value, (classmethod, staticmethod)):
            continue
        if not name.startswith("_") or name.startswith("__"):
            continue
        for base in cls.__mro__[1:]:
            if base.__module__.startswith("areal.") and name in vars(base):
                found.add(f"{base.__module__}:{base.__qualname__}.{name}")
                break
    return found


def test_every_private_override_is_listed():
    listed = {p.name for p in PRIVATE}
    for path in SUBCLASSES:
        unlisted = areal_private_overrides(load(path)) - listed
        assert not unlisted, f"{path} overrides AReaL's private {unlisted}: list it"


def test_every_listed_override_still_exists():
    """No stale entries: what is listed as overridden is overridden."""
    for entry in PRIVATE:
        method = entry.name.rsplit(".", 1)[1]
        for user in entry.users if entry.overridden else ():
            assert method in vars(load(user)), f"{user} no longer overrides {method}"

"""AReaL's private internals the project relies on are unchanged and all listed.

The list itself, each entry with why, is ``memagent_workflow/areal_private.py``.
"""

from __future__ import annotations

import areal
import pytest

from memagent_workflow.areal_private import (
    LOCKED,
    PRIVATE,
    SUBCLASSES,
    digest,
    load,
)


@pytest.mark.parametrize("entry", PRIVATE, ids=[p.name for p in PRIVATE])
def test_what_the_project_relies_on_is_unchanged(entry):
    assert digest(entry.code()) == entry.pinned(areal.__version__), (
        f"AReaL {areal.__version__}: {entry.name} differs from the code reviewed "
        f"for that release. The project relies on it ({entry.why}); re-check "
        f"{', '.join(entry.users)}, then update the digest (or its Revised entry) "
        "in memagent_workflow/areal_private.py."
    )


def test_a_revised_digest_applies_to_its_release_only():
    revised = [p for p in PRIVATE if p.revised]
    assert revised  # AReaL 2.0.0 changed three of them
    for entry in revised:
        for r in entry.revised:
            assert r.areal != LOCKED and r.sha256 != entry.sha256 and r.change
            assert entry.pinned(r.areal) == r.sha256
        assert entry.pinned(LOCKED) == entry.sha256
        assert entry.pinned("9.9.9") == entry.sha256  # unreviewed: 1.0.4's


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

"""How a pinned AReaL internal is checked against the installed AReaL.

The entries are in ``memagent_workflow/areal_internals/pinned.py`` (each internal, why
the project relies on it, its digest in LOCKED) and
``memagent_workflow/areal_internals/revised.py`` (its digest at later AReaL commits).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
from dataclasses import dataclass

from memagent_workflow.areal_internals.revised import REVISED, Revised

LOCKED = "1.0.4"  # the AReaL of uv.lock, which CI tests
LOCKED_COMMIT = "a0f3dca2 (1.0.4)"


@dataclass(frozen=True)
class Review:
    """One reading of an entry's code: where, which functions, their digest."""

    commit: str
    code: tuple[str, ...]
    sha256: str


@dataclass(frozen=True)
class Private:
    name: str  # module:qualified name
    users: tuple[str, ...]  # module:class of the project that overrides or relies on it
    why: str
    sha256: str  # in AReaL LOCKED
    overridden: bool = True  # False: relied on as it is

    @property
    def revised(self) -> tuple[Revised, ...]:
        """The commits after LOCKED where the code changed (revised.py)."""
        return REVISED.get(self.name, ())

    def code(self):
        return load(self.name)

    def reviews(self, areal_version: str) -> tuple[Review, ...]:
        """The readings accepted for ``areal_version``: LOCKED's code (unchanged
        code holds in any release), and each revision read for that release."""
        return (
            Review(LOCKED_COMMIT, (self.name,), self.sha256),
            *(
                Review(r.commit, r.code or (self.name,), r.sha256)
                for r in self.revised
                if r.areal == areal_version
            ),
        )

    def pinned(self, areal_version: str) -> tuple[str, ...]:
        """The digests accepted for ``areal_version``."""
        return tuple(r.sha256 for r in self.reviews(areal_version))

    def reviewed(self, areal_version: str) -> Review | None:
        """The reading whose code the installed AReaL has, or None."""
        for review in self.reviews(areal_version):
            try:
                found = digest(*(load(path) for path in review.code))
            except (ImportError, AttributeError):  # not where that commit had it
                continue
            if found == review.sha256:
                return review
        return None

    def unreviewed(self, areal_version: str) -> str | None:
        """Why the installed code is not one reviewed for ``areal_version``."""
        if self.reviewed(areal_version) is not None:
            return None
        known = "; ".join(
            f"{r.commit}: {' + '.join(p.rsplit('.', 1)[1] for p in r.code)}"
            for r in self.reviews(areal_version)
        )
        return (
            f"AReaL {areal_version}: {self.name} differs from the code reviewed for "
            f"that release ({known}). The project relies on it ({self.why}); "
            f"re-check {', '.join(self.users)}, then update the digest in "
            "memagent_workflow/areal_internals/pinned.py or add a Revised entry naming the "
            "AReaL commit in memagent_workflow/areal_internals/revised.py."
        )


def load(path: str):
    """The object a ``module:qualified.name`` path names."""
    module, qualname = path.split(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def digest(*fns) -> str:
    """sha256 of the source of ``fns`` (in order), blank lines dropped and each
    line stripped."""
    lines = [line.strip() for fn in fns for line in inspect.getsource(fn).splitlines()]
    return hashlib.sha256("\n".join(x for x in lines if x).encode()).hexdigest()

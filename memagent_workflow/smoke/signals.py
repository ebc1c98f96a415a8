"""SIGTERM and SIGHUP take the smoke's Ctrl-C path.

A batch system's cancel, ``kill`` or a closed terminal stops the smoke as
Ctrl-C does: `Stopped` (a ``KeyboardInterrupt``) is raised in the main thread,
the supervisor stops the child and every marked process, and the report and
``smoke.json`` are written with the signal named.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """The smoke was sent a signal that stops it (its name is the message)."""


def _raise(signum: int, _frame: object) -> None:
    for sig in SIGNALS:  # a second one must not cut the cleanup short
        signal.signal(sig, signal.SIG_IGN)
    raise Stopped(signal.Signals(signum).name)


def cause_of(exc: KeyboardInterrupt) -> str:
    """What stopped the smoke: the signal's name, or Ctrl-C."""
    return str(exc) if isinstance(exc, Stopped) else "Ctrl-C"


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP raise `Stopped` meanwhile (main thread only)."""
    saved = {sig: signal.signal(sig, _raise) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)

"""A quiet terminal: the step lines, a progress bar, warnings and errors; the rest in files.

A training run prints AReaL's stats table after every step, and under AReaL's
single controller every worker's output too (the scheduler pipes each worker
through ``tee`` into ``{role}.log``, ``merged.log`` and the controller's
stdout). `quiet_terminal` keeps all of it on disk and shows little:

* AReaL's own file logging (`areal.utils.logging.setup_file_logging`) writes
  every record of this process to ``main.log`` and ``merged.log``;
* this process's stdout and stderr, which its workers inherit, go through a
  pipe: every line is appended to ``console.log`` (what the terminal used to
  show), and the terminal shows a line only if `Screen` passes it: log records
  of level WARNING and above, the INFO records of the project's own loggers
  (`SHOWN`: the step line, the start and the end of a run, the build of the
  stand-in's model), and raw output that is neither a progress bar nor a line
  of a hidden record (Python warnings, tracebacks).

`console()` is the terminal itself, for a progress bar; `progress_bar` draws one
there (the warm start's, the training steps').
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from collections.abc import Iterator
from typing import TextIO

from areal.utils import logging
from tqdm import tqdm

CONSOLE_LOG = "console.log"
# Loggers whose INFO records the terminal shows (message only): the step lines,
# a run's start and end, and the start-up's model build (building, waiting for
# another process's build, reusing a cached one, the warm start's summary).
SHOWN = ("MemAgentTrainer", "MemAgentTrain", "BuildOnce", "StandinBuild")
# Seconds between redraws of a progress bar: on a terminal, and into a pipe or
# a file (where every redraw is kept: a few hundred in a 10-minute warm start).
REDRAW_S, REDRAW_PIPED_S = 0.5, 5.0

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_RAY_PREFIX = re.compile(r"^\([^()]*pid=\d+[^()]*\)\s+")
_LEVEL = r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)"
_RECORDS = (
    # AReaL's format: "(AReaL) 20261124-05:03:20.424 Name LEVEL: message"
    re.compile(rf"^\(AReaL\) \S+ (?P<name>.+?) {_LEVEL}:(?: (?P<msg>.*))?$"),
    # Python's default-style format (the stand-in's server)
    re.compile(rf"^\d{{4}}-\d\d-\d\d \S+ (?P<name>\S+) {_LEVEL}:(?: (?P<msg>.*))?$"),
)
# Progress bars and chatter of the libraries below AReaL.
_NOISE = re.compile(r"(it/s|s/it|examples/s)\]|^\[Gloo\]|^swanlab: ")
_CONTINUATION = re.compile(r"^(\s|[│├╞╒╘═─┼┤]|$)")

_console: TextIO | None = None


def console() -> TextIO:
    """The terminal: the real one under `quiet_terminal`, else stderr."""
    return _console if _console is not None else sys.stderr


def progress_bar(total: int, desc: str, **kwargs) -> tqdm:
    """A tqdm bar on `console()`, drawn whether or not it is a terminal (a piped
    run shows it too), redrawn every `REDRAW_S` (`REDRAW_PIPED_S` into a pipe)."""
    file = kwargs.pop("file", None) or console()
    tty = getattr(file, "isatty", lambda: False)()
    return tqdm(
        total=total, desc=desc, file=file, dynamic_ncols=True,
        mininterval=REDRAW_S if tty else REDRAW_PIPED_S, **kwargs,
    )  # fmt: skip


class Screen:
    """Decides, line by line, what the terminal shows (see the module doc)."""

    def __init__(self, shown: tuple[str, ...] = SHOWN):
        self.shown = shown
        self.showing = True  # whether the record being continued is shown

    def show(self, line: str) -> str | None:
        """``line`` (without its newline) as the terminal shows it, or None."""
        text = _RAY_PREFIX.sub("", _ANSI.sub("", line)).rstrip()
        for pattern in _RECORDS:
            m = pattern.match(text)
            if m is None:
                continue
            if m["level"] in ("WARNING", "ERROR", "CRITICAL"):
                self.showing = True
                return line
            self.showing = m["level"] == "INFO" and m["name"] in self.shown
            return (m["msg"] or "") if self.showing else None
        if _CONTINUATION.match(text):
            return line if self.showing and text else None
        self.showing = _NOISE.search(text) is None
        return line if self.showing else None


def _pump(read_fd: int, terminal: TextIO, full: TextIO) -> None:
    screen = Screen()
    with os.fdopen(read_fd, "rb") as pipe:
        for raw in pipe:
            text = raw.decode("utf-8", "replace")
            full.write(text)
            full.flush()
            shown = screen.show(text.rstrip("\n"))
            if shown is not None:
                tqdm.write(shown, file=terminal)
    full.close()
    terminal.close()


@contextlib.contextmanager
def quiet_terminal(log_dir: str) -> Iterator[None]:
    """The terminal shows what `Screen` passes; ``log_dir`` gets everything."""
    global _console
    rank = int(os.environ.get("RANK", "0"))
    os.makedirs(log_dir, exist_ok=True)
    logging.setup_file_logging(log_dir, "main.log" if rank == 0 else f"rank{rank}.log")
    name = CONSOLE_LOG if rank == 0 else f"console-rank{rank}.log"
    full = open(os.path.join(log_dir, name), "a", encoding="utf-8")
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    read_fd, write_fd = os.pipe()
    os.dup2(write_fd, 1)
    os.dup2(write_fd, 2)
    os.close(write_fd)
    _console = os.fdopen(os.dup(saved[0]), "w", buffering=1, errors="replace")
    pump = threading.Thread(
        target=_pump, args=(read_fd, _console, full), name="terminal", daemon=True
    )
    pump.start()
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
        # Ends once every process holding the pipe (workers, servers) is gone.
        pump.join(timeout=10)
        _console = None

"""Each child of the smoke in its own process group, under a deadline per phase;
stopped, with everything it started, when a deadline runs out, when it fails,
and when it ends.

Every process the smoke starts carries ``MARK_ENV=<mark>`` in its environment,
inherited from the child down to AReaL's workers, the inference servers they
launch and a local Ray instance's workers; `stop_marked` finds them by it
(``psutil``), wherever they were re-parented, and checks that none is left.
The phase a child is in is the one its events (`events`) opened last; before
its first event it is ``first_phase``, between two phases the one just ended
is followed by ``after <phase>``, bounded by ``between_s``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from memagent_workflow.infra.children import die_with_parent
from memagent_workflow.smoke.events import (
    EVENTS_ENV,
    RUN_ENV,
    Event,
    last_ended,
    open_phase,
    read_events,
)
from memagent_workflow.smoke.slurm_jobs import cancel_trial_jobs

MARK_ENV = "MEMAGENT_SMOKE_MARK"
GRACE_S = 10.0  # SIGTERM, then SIGKILL after this long
_ERROR = re.compile(r"^(\w+\.)*\w*(Error|Exception|Refused|Stalled)\b.*")


class PhaseFailed(RuntimeError):
    """A phase that failed or ran out of its deadline: its name and the cause."""

    def __init__(self, phase: str, cause: str):
        super().__init__(phase, cause)
        self.phase, self.cause = phase, cause

    def __str__(self) -> str:
        return f"{self.phase}: {self.cause}"


def is_marked(proc: psutil.Process, mark: str) -> bool:
    try:
        return proc.environ().get(MARK_ENV) == mark
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def marked(mark: str) -> list[psutil.Process]:
    """The live processes carrying ``mark`` (this one excluded)."""
    me = os.getpid()
    return [p for p in psutil.process_iter() if p.pid != me and _live(p, mark)]


def _live(proc: psutil.Process, mark: str) -> bool:
    try:
        return is_marked(proc, mark) and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def stop_marked(mark: str, grace_s: float = GRACE_S) -> list[str]:
    """SIGTERM every process carrying ``mark``, SIGKILL what is left after
    ``grace_s``; the processes still there (``pid cmdline``), if any."""
    procs = marked(mark)
    for p in procs:
        _signal(p, signal.SIGTERM)
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for p in alive:
        _signal(p, signal.SIGKILL)
    psutil.wait_procs(alive, timeout=5)
    left = []
    for p in marked(mark):
        try:
            left.append(f"{p.pid} {' '.join(p.cmdline())[:120]}")
        except psutil.Error:
            continue
    return left


def _signal(proc: psutil.Process, sig: int) -> None:
    try:
        proc.send_signal(sig)
    except psutil.Error:
        pass


def cause_in(log: Path, lines: int = 400) -> str:
    """The last error line of a child's log (a traceback's last line), else
    its last line."""
    try:
        tail = log.read_text(errors="replace").splitlines()[-lines:]
    except FileNotFoundError:
        return "no log"
    tail = [_plain(line) for line in tail if line.strip()]
    errors = [line for line in tail if _ERROR.match(line)]
    return (errors or tail or ["no output"])[-1][:500]


def _plain(line: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", line).strip()


@dataclass
class Child:
    """One child process of the smoke and the phases it reports."""

    run: str  # train, resume or eval
    cmd: list[str]
    log: Path
    first_phase: str
    env: dict[str, str] = field(default_factory=dict)  # on top of this one's


class Supervisor:
    """Runs children one at a time under ``deadlines`` (seconds by phase)."""

    def __init__(
        self,
        events: Path,
        deadlines: Mapping[str, float],
        mark: str,
        between_s: float = 600.0,
        poll_s: float = 0.5,
        cwd: Path | None = None,
        slurm_jobs: list[str] | None = None,
    ):
        self.events, self.deadlines, self.mark = events, deadlines, mark
        self.between_s, self.poll_s, self.cwd = between_s, poll_s, cwd
        self.slurm_jobs = slurm_jobs or []  # job-name prefixes cancelled on stop

    def env(self, child: Child) -> dict[str, str]:
        return {
            **os.environ,
            **child.env,
            MARK_ENV: self.mark,
            EVENTS_ENV: str(self.events),
            RUN_ENV: child.run,
        }

    def current(self, run: str, started: float, first: str) -> tuple[str, float, float]:
        """The phase ``run`` is in, when it started and its deadline."""
        events = read_events(self.events)
        found = open_phase(events, run)
        if found is not None:
            phase, t = found
            return phase, t, self.deadlines[phase]
        ended: Event | None = last_ended(events, run)
        if ended is None:
            return first, started, self.deadlines[first]
        return f"after {ended.phase}", ended.t, self.between_s

    def run(self, child: Child) -> None:
        """Run ``child`` to its end; `PhaseFailed` if a phase fails or runs
        out of time. Nothing it started is left running either way."""
        child.log.parent.mkdir(parents=True, exist_ok=True)
        started = time.time()
        with open(child.log, "w") as log:
            proc = subprocess.Popen(
                child.cmd, cwd=self.cwd, env=self.env(child), stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=die_with_parent,  # the smoke killed outright
            )  # fmt: skip
        try:
            self._watch(proc, child, started)
        except BaseException as exc:
            left = self._stop(proc)
            if left and isinstance(exc, PhaseFailed):
                exc.cause += "; processes left running: " + "; ".join(left)
            raise
        if left := self._stop(proc):
            raise PhaseFailed("teardown", "processes left running: " + "; ".join(left))

    def _watch(self, proc: subprocess.Popen, child: Child, started: float) -> None:
        while True:
            rc = proc.poll()
            phase, since, deadline = self.current(child.run, started, child.first_phase)
            if rc is not None:
                break
            if time.time() - since > deadline:
                raise PhaseFailed(
                    phase,
                    f"ran out of its deadline ({deadline:g} s); log: {child.log}",
                )
            time.sleep(self.poll_s)
        if rc != 0:
            raise PhaseFailed(
                phase, f"{cause_in(child.log)} (exit {rc}; log: {child.log})"
            )

    def _stop(self, proc: subprocess.Popen) -> list[str]:
        """Stop the child's group, every marked process and the trial's Slurm
        jobs; what is left."""
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        left = stop_marked(self.mark)
        cancel_trial_jobs(self.slurm_jobs)
        try:
            proc.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return left

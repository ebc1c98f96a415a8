"""``examples/ask.py``'s wait for its one episode, within a bound.

The episode ends in a record (the workflow's, ``error`` set if it failed) or in
`EpisodeLost`, whose message is the cause, when:

- the engine gives None: AReaL's workflow executor returns None for an episode
  whose workflow raised (it logs the traceback as "Workflow execution failed")
  or that its rollout controller stopped waiting for (``rollout.request_timeout``);
- the launched rollout worker died (its scheduler's health check, every
  ``HEALTH_EVERY_S``);
- no record came within the deadline, ``rollout.request_timeout`` seconds from
  the submission: the bound AReaL's single controller puts on one task, here in
  every launch mode.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

HEALTH_EVERY_S = 30.0  # how often a launched worker's health is checked
_POLL_S = 0.2  # the engine is asked for the record this often
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # AReaL's log lines are coloured


class EpisodeLost(RuntimeError):
    """The episode gave no record; the message says why, in one line."""


def wait_record(
    engine: Any,
    deadline_s: float,
    *,
    on_poll: Callable[[], None] = lambda: None,
    worker_role: str | None = None,
) -> dict[str, Any]:
    """The record of the one episode submitted to ``engine``. ``on_poll`` runs
    after every poll (the progress bar); ``worker_role``: the launched rollout
    workers' role, checked for health."""
    start = time.monotonic()
    next_health = start + HEALTH_EVERY_S
    while True:
        try:
            got = engine.wait(1, timeout=_POLL_S, raise_timeout=False)
        except Exception as exc:  # AReaL's executor thread died, say
            raise EpisodeLost(f"the inference engine failed: {one_line(exc)}") from exc
        on_poll()
        if got:
            if isinstance(got[0], dict):
                return got[0]
            raise EpisodeLost(
                f"the engine returned no record ({got[0]!r:.80}): AReaL's workflow "
                "executor gives None for an episode whose workflow raised (see "
                "'Workflow execution failed' above, or the rollout worker's log) "
                "or that timed out after rollout.request_timeout"
            )
        now = time.monotonic()
        if worker_role is not None and now >= next_health:
            check_workers(engine, worker_role)
            next_health = now + HEALTH_EVERY_S
        if now - start > deadline_s:
            raise EpisodeLost(
                f"no result within rollout.request_timeout={deadline_s:g} s (the "
                "episode's deadline; raise it for a longer document)"
            )


def check_workers(engine: Any, role: str) -> None:
    """`EpisodeLost` if a worker of ``role`` exited (AReaL's scheduler sees its
    process, or its Ray actor, gone); a worker slow to answer is left to the
    deadline."""
    from areal.infra.scheduler.exceptions import WorkerFailedError, WorkerTimeoutError

    try:
        engine.scheduler.get_workers(role, timeout=HEALTH_EVERY_S)
    except WorkerTimeoutError:
        return
    except WorkerFailedError as exc:
        # the code is its launcher's (LocalScheduler's ``bash -c ... | tee``)
        lines = _COLOUR.sub("", exc.stderr).splitlines()
        last = [line for line in lines if line.strip()][-1:]
        raise EpisodeLost(
            f"the rollout worker {exc.worker_id} died (its launch command "
            f"exited with code {exc.exit_code})"
            + (f"; the last line of its log: {last[0].strip()[:200]}" if last else "")
        ) from exc


def one_line(exc: BaseException) -> str:
    """An exception as one short line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:300]

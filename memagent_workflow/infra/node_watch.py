"""The node-loss watcher of `MemAgentRayScheduler`: when a Ray node holding
workers is lost, and what the run does then.

Every ``POLL_S`` seconds it reads Ray's node table and knocks on the raylet of
each node that holds workers. A node Ray marks dead (``Alive: False``) is lost
at once. A raylet that refuses (a killed one refuses at once, where Ray's
health checks take 15-30 s to mark its node dead), a node missing from the
table, or a table that cannot be read is a strike: the node (or the cluster)
is lost only after ``STRIKES`` failed probes in a row spanning at least
``STRIKE_WINDOW_S``. One refused knock or one GCS hiccup is not a loss.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Callable

import ray
from areal.utils import logging

logger = logging.getLogger("MemAgentRayNodes")

POLL_S = 2.0
#: Failed probes in a row, over at least this long, before a node is lost.
STRIKES = 3
STRIKE_WINDOW_S = 4.0
#: How long a run that lost a node may take to fail by itself before it is ended.
GRACE_S = 30.0
#: A poll, the strikes, the grace, a second look and the trainer's own
#: shutdown: the bound tests hold a run to.
NODE_LOST_BOUND_S = 90.0
#: The exit status of a run stopped by a lost node (EX_TEMPFAIL: rerun once healed).
NODE_LOST_EXIT = 75
CLUSTER = "cluster"  # the strike key of the node table itself


def node_name(node: dict) -> str:
    """A node in the logs: host:raylet-port (id prefix); several may share a host."""
    return f"{node['NodeManagerHostname']}:{node['NodeManagerPort']} ({node['NodeID'][:8]})"


def raylet_answers(node: dict, timeout: float = 2.0) -> bool:
    """Whether the node's raylet accepts connections."""
    try:
        socket.create_connection(
            (node["NodeManagerAddress"], node["NodeManagerPort"]), timeout
        ).close()
    except OSError:
        return False
    return True


class Strikes:
    """Failed probes in a row, per node (or `CLUSTER`), and when the first was."""

    def __init__(self) -> None:
        self._first: dict[str, float] = {}
        self._count: dict[str, int] = {}

    def fail(self, key: str, now: float) -> bool:
        """Count a failed probe of ``key``; True once it is a loss."""
        self._first.setdefault(key, now)
        self._count[key] = self._count.get(key, 0) + 1
        return self._count[key] >= STRIKES and now - self._first[key] >= STRIKE_WINDOW_S

    def clear(self, key: str) -> None:
        self._first.pop(key, None)
        self._count.pop(key, None)


class NodeWatch:
    """Watches the nodes in ``node_of`` (worker id -> node id) from a thread;
    ``kill_workers`` ends the survivors when a run outlives the grace."""

    def __init__(self, kill_workers: Callable[[], None]) -> None:
        self.node_of: dict[str, str] = {}
        self.kill_workers = kill_workers
        self.closing = threading.Event()
        self._lock = threading.Lock()
        self._strikes = Strikes()
        self._thread: threading.Thread | None = None
        self.clock: Callable[[], float] = time.monotonic

    def add(self, worker_id: str, node_id: str) -> None:
        with self._lock:
            self.node_of[worker_id] = node_id

    def forget_role(self, role: str) -> None:
        """The role's workers are deleted: their nodes may go now."""
        with self._lock:
            for worker_id in [w for w in self.node_of if w.rsplit("/", 1)[0] == role]:
                del self.node_of[worker_id]

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._watch, name="ray-node-watch", daemon=True
            )
            self._thread.start()

    def stand_down(self) -> None:
        """The run's end: stop watching (waits for a probe under way)."""
        self.closing.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2 * POLL_S + 5)

    def lost(self) -> str:
        """Which node holding workers looks lost now, and which workers it held
        ("" if none): one look, for a message."""
        return self.check(_OneLook())

    def check(self, strikes: Strikes | None = None) -> str:
        """One probe: the loss it confirms with the probes before it counted in
        ``strikes`` (the watcher's own by default; "" if none)."""
        strikes = self._strikes if strikes is None else strikes
        with self._lock:
            node_of = dict(self.node_of)
        if not node_of or self.closing.is_set():
            return ""
        now = self.clock()
        try:
            nodes = {n["NodeID"]: n for n in ray.nodes()}
        except Exception as exc:  # noqa: BLE001 - a hiccup, or the head is gone
            if not ray.is_initialized():  # the job's own Ray shut down: its end
                return ""
            if strikes.fail(CLUSTER, now):
                return f"the Ray cluster stopped answering ({exc!r})"
            return ""
        strikes.clear(CLUSTER)
        for node_id in sorted(set(node_of.values())):
            node = nodes.get(node_id)
            dead = node is not None and not node["Alive"]  # Ray's own verdict
            if dead or node is None or not raylet_answers(node):
                if dead or strikes.fail(node_id, now):
                    held = sorted(w for w, n in node_of.items() if n == node_id)
                    name = node_name(node) if node else node_id
                    return f"Ray node {name} was lost; it held {', '.join(held)}"
            else:
                strikes.clear(node_id)
        return ""

    def confirm(self) -> str:
        """A second look: the loss, probed afresh ``STRIKES`` times over
        ``STRIKE_WINDOW_S`` ("" if the nodes answer, or the run has ended)."""
        strikes, lost = Strikes(), ""
        for attempt in range(STRIKES):
            if attempt:
                self.closing.wait(STRIKE_WINDOW_S / (STRIKES - 1))
            lost = self.check(strikes)
        return lost

    def _watch(self) -> None:
        while not self.closing.wait(POLL_S):
            if lost := self.check():
                if self._stop(lost):
                    return

    def _stop(self, lost: str) -> bool:
        """Report the loss; if the run has not ended by itself (its own calls
        to the lost workers fail) within ``GRACE_S`` and the node is still lost,
        end it here. False: the nodes answer again, keep watching."""
        logger.error(f"{lost}: the run stops.")
        if self.closing.wait(GRACE_S):
            return True
        if not self.confirm():
            if self.closing.is_set():
                return True
            logger.warning("the nodes answer again: the run goes on, watched")
            self._strikes = Strikes()
            return False
        logger.error(
            f"the run did not stop within {GRACE_S:.0f} s of losing the node: "
            f"stopping its workers and exiting ({NODE_LOST_EXIT}). Start the lost "
            "node again (or replace it) and rerun the same command: it resumes "
            "from the last recover checkpoint."
        )
        self.kill_workers()
        sys.stdout.flush()
        sys.stderr.flush()
        time.sleep(0.5)  # the terminal's pipe shows the error first
        os._exit(NODE_LOST_EXIT)
        return True  # os._exit does not return (but a test's stand-in does)


class _OneLook(Strikes):
    """Every failed probe is a loss: `NodeWatch.lost`'s single look."""

    def fail(self, key: str, now: float) -> bool:
        return True

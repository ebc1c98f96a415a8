"""AReaL's Ray scheduler, telling where its workers run and stopping when a node is lost.

AReaL 1.0.4's `RayScheduler` places each worker in a placement group (PACK) and
leaves the node to Ray; it never says which node took a worker, and when a
node dies its controllers wait on workers that will never answer (an actor
call to a dead node, a rollout whose server went with it). `MemAgentRayScheduler`
adds two things and changes nothing else:

- after each role's workers start it logs the node each one runs on
  (``actor/0 on Ray node vm:41425 (6019f03b)``: host, raylet port, node id);
- a watcher checks, every ``POLL_S`` seconds, each node that holds workers:
  Ray's node table, and whether its raylet still accepts connections (a
  killed raylet refuses at once; Ray's health checks take 15-30 s to mark its
  node dead). On a loss it logs which node and which workers it held. The
  run's own calls to those workers then fail and it stops (the trainer's stop
  message names the node too); a run still going ``GRACE_S`` later (waiting on
  a rollout that will never come) has its surviving workers killed and exits
  with `NODE_LOST_EXIT`. The recover checkpoint of the last finished step is on
  the shared file system: a rerun on a healed cluster resumes there
  (docs/multi-node.md).
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time

import ray
from areal.infra.scheduler.ray import RayScheduler
from areal.utils import logging

logger = logging.getLogger("MemAgentRayNodes")

POLL_S = 2.0
#: How long a run that lost a node may take to fail by itself before it is ended.
GRACE_S = 30.0
#: A poll, the grace and the trainer's own shutdown: the bound tests hold a run to.
NODE_LOST_BOUND_S = 90.0
#: The exit status of a run stopped by a lost node (EX_TEMPFAIL: rerun once healed).
NODE_LOST_EXIT = 75


def node_name(node: dict) -> str:
    """A node in the logs: host:raylet-port (id prefix); several may share a host."""
    return f"{node['NodeManagerHostname']}:{node['NodeManagerPort']} ({node['NodeID'][:8]})"


def raylet_answers(node: dict, timeout: float = 2.0) -> bool:
    """Whether the node's raylet accepts connections: a killed raylet refuses at
    once, where Ray's health checks take 15-30 s to mark its node dead."""
    try:
        socket.create_connection(
            (node["NodeManagerAddress"], node["NodeManagerPort"]), timeout
        ).close()
    except OSError:
        return False
    return True


class MemAgentRayScheduler(RayScheduler):
    """`RayScheduler` that logs each worker's node and stops when a node is lost."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.node_of: dict[str, str] = {}  # worker id -> Ray node id
        self._watcher: threading.Thread | None = None
        self._closing = threading.Event()

    def create_workers(self, job, *args, **kwargs) -> list[str]:
        worker_ids = super().create_workers(job, *args, **kwargs)
        names = {n["NodeID"]: node_name(n) for n in ray.nodes()}
        # AReaL 1.0.4 and the v2.0.0 tag keep each worker's placement group here
        # (pinned); AReaL main's scheduler over HTTP does not: nothing is logged.
        infos = getattr(self, "_worker_info_by_id", {})
        for worker_id in worker_ids:
            info = infos.get(worker_id)
            if getattr(info, "placement_group", None) is None:  # colocated, no process
                continue
            node = placement_node(info.placement_group, info.bundle_index or 0)
            self.node_of[worker_id] = node
            logger.info(f"{worker_id} on Ray node {names.get(node, node)}")
        if self._watcher is None:
            self._watcher = threading.Thread(
                target=self._watch, name="ray-node-watch", daemon=True
            )
            self._watcher.start()
        return worker_ids

    def delete_workers(self, role: str | None = None, reverse_order: bool = False):
        if role is None:
            self._closing.set()  # the run's end: nodes may go now
        super().delete_workers(role, reverse_order)

    def lost(self) -> str:
        """Which node holding workers is gone, and which workers it held ("" if none)."""
        try:
            nodes = {n["NodeID"]: n for n in ray.nodes()}
        except Exception as exc:  # noqa: BLE001 - the head itself is gone
            return f"the Ray cluster stopped answering ({exc!r})"
        for node_id in sorted(set(self.node_of.values())):
            node = nodes.get(node_id)
            if node is None or not node["Alive"] or not raylet_answers(node):
                held = sorted(w for w, n in self.node_of.items() if n == node_id)
                name = node_name(node) if node else node_id
                return f"Ray node {name} was lost; it held {', '.join(held)}"
        return ""

    def _watch(self) -> None:
        while not self._closing.wait(POLL_S):
            if lost := self.lost():
                self._stop(lost)
                return

    def _stop(self, lost: str) -> None:
        """Report the loss; if the run has not ended by itself (its own calls
        to the lost workers fail) within ``GRACE_S``, end it here."""
        logger.error(f"{lost}: the run stops.")
        if self._closing.wait(GRACE_S):
            return
        logger.error(
            f"the run did not stop within {GRACE_S:.0f} s of losing the node: "
            f"stopping its workers and exiting ({NODE_LOST_EXIT}). Start the lost "
            "node again (or replace it) and rerun the same command: it resumes "
            "from the last recover checkpoint."
        )
        for info in list(getattr(self, "_worker_info_by_id", {}).values()):
            try:  # the survivors' processes (and the servers they started)
                ray.kill(info.actor, no_restart=True)
            except Exception:  # noqa: BLE001 - on the way out regardless
                pass
        sys.stdout.flush()
        sys.stderr.flush()
        time.sleep(0.5)  # the terminal's pipe shows the error first
        os._exit(NODE_LOST_EXIT)


def placement_node(placement_group, bundle_index: int) -> str:
    """The id of the node holding ``bundle_index`` of ``placement_group``."""
    table = ray.util.placement_group_table(placement_group)
    return table["bundles_to_node_id"][bundle_index]

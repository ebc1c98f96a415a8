"""AReaL's Ray scheduler, telling where its workers run and stopping when a node is lost.

AReaL 1.0.4's `RayScheduler` places each worker in a placement group (PACK) and
leaves the node to Ray; it never says which node took a worker, and when a
node dies its controllers wait on workers that will never answer (an actor
call to a dead node, a rollout whose server went with it). `MemAgentRayScheduler`
adds two things and changes nothing else:

- after each role's workers start it logs the node each one runs on
  (``actor/0 on Ray node vm:41425 (6019f03b)``: host, raylet port, node id);
- a watcher (`memagent_workflow.infra.node_watch`) checks, every ``POLL_S``
  seconds, each node that holds workers: Ray's node table, and whether its
  raylet still accepts connections. On a loss it logs which node and which
  workers it held. The run's own calls to those workers then fail and it
  stops (the trainer's stop message names the node too); a run still going
  ``GRACE_S`` later (waiting on a rollout that will never come), whose node is
  still lost when checked again, has its surviving workers killed and exits
  with `NODE_LOST_EXIT`. The recover checkpoint of the last finished step is
  on the shared file system: a rerun on a healed cluster resumes there
  (docs/multi-node.md).

The watcher stands down when the run ends: a role's deleted workers leave it
at once, and it stops when the trainer closes (`MemAgentPPOTrainer.close`),
when all workers are deleted, and before the job's Ray is shut down
(`memagent_workflow.infra.ray_cluster.shutdown`).
"""

from __future__ import annotations

import weakref

import ray
from areal.infra.scheduler.ray import RayScheduler
from areal.utils import logging

from memagent_workflow.infra.node_watch import (  # noqa: F401 - the run's bounds
    GRACE_S,
    NODE_LOST_BOUND_S,
    NODE_LOST_EXIT,
    NodeWatch,
    node_name,
)

logger = logging.getLogger("MemAgentRayNodes")

# Every scheduler whose watcher may still run: `stop_watchers` stands them down
# before the job's Ray is shut down.
_WATCHED: weakref.WeakSet[MemAgentRayScheduler] = weakref.WeakSet()


class MemAgentRayScheduler(RayScheduler):
    """`RayScheduler` that logs each worker's node and stops when a node is lost."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.watch = NodeWatch(self._kill_workers)

    @property
    def node_of(self) -> dict[str, str]:
        """Worker id -> the id of the Ray node it runs on."""
        return self.watch.node_of

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
            self.watch.add(worker_id, node)
            logger.info(f"{worker_id} on Ray node {names.get(node, node)}")
        _WATCHED.add(self)
        self.watch.start()
        return worker_ids

    def delete_workers(self, role: str | None = None, reverse_order: bool = False):
        if role is None:
            self.stand_down()  # the run's end: nodes may go now
        else:
            self.watch.forget_role(role)
        super().delete_workers(role, reverse_order)

    def stand_down(self) -> None:
        """Stop watching the nodes: the run is over."""
        self.watch.stand_down()

    def lost(self) -> str:
        """Which node holding workers looks lost now, and which workers it held."""
        return self.watch.lost()

    def _kill_workers(self) -> None:
        """The survivors' processes (and the servers they started)."""
        if not ray.is_initialized():  # ray.kill would start a new instance
            return
        for info in list(getattr(self, "_worker_info_by_id", {}).values()):
            try:
                ray.kill(info.actor, no_restart=True)
            except Exception:  # noqa: BLE001 - on the way out regardless
                pass


def stop_watchers() -> None:
    """Stand every scheduler's watcher down (before Ray is shut down)."""
    for scheduler in list(_WATCHED):
        scheduler.stand_down()


def placement_node(placement_group, bundle_index: int) -> str:
    """The id of the node holding ``bundle_index`` of ``placement_group``."""
    table = ray.util.placement_group_table(placement_group)
    return table["bundles_to_node_id"][bundle_index]

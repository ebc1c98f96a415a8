"""Connect the single controller to Ray when ``scheduler.type=ray``.

AReaL 1.0.4's `RayScheduler` (and the v2.0.0 tag's, the same) uses Ray without
starting it: its first placement group fails with "Ray has not been started
yet" unless the program has called ``ray.init()``. ``ray.init()`` with no
address joins the cluster started by ``ray start`` on this machine (or the one
in ``RAY_ADDRESS``) and, when there is none, starts a Ray instance for this
machine alone.

AReaL's main after the v2.0.0 tag rewrote `RayScheduler` over HTTP
(`RAY_OVER_HTTP`): its workers are processes that Ray actors launch, talking
HTTP to the controller; it calls ``ray.init(address="auto")`` itself (else
starts Ray here), so `ray_for`'s connection is the one it finds, and it refuses
a cluster without GPUs. The preflight states each one's needs
(`memagent_workflow.preflight.cluster`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from importlib.util import find_spec

from areal.utils import logging

logger = logging.getLogger("RayCluster")

# 1.0.4 and the v2.0.0 tag run each Ray worker as a Ray actor (RayRPCServer);
# AReaL main after the tag dropped that module with its rewrite over HTTP.
RAY_OVER_HTTP = find_spec("areal.infra.rpc.ray_rpc_server") is None


@contextlib.contextmanager
def ray_for(scheduler_type: str | None) -> Iterator[None]:
    """Inside: Ray is initialised if the scheduler is Ray's (left as found)."""
    if scheduler_type != "ray":
        yield
        return
    import ray

    if ray.is_initialized():  # e.g. the CPU job's own local instance
        yield
        return
    ray.init()
    logger.info(f"connected to Ray: {ray.cluster_resources()}")
    try:
        yield
    finally:
        ray.shutdown()  # disconnects; a cluster from `ray start` keeps running

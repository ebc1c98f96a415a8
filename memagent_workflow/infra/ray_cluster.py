"""Connect the single controller to Ray when ``scheduler.type=ray``.

AReaL 1.0.4's `RayScheduler` uses Ray without starting it: its first placement
group fails with "Ray has not been started yet" unless the program has called
``ray.init()``. ``ray.init()`` with no address joins the cluster started by
``ray start`` on this machine (or the one in ``RAY_ADDRESS``) and, when there
is none, starts a Ray instance for this machine alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from areal.utils import logging

logger = logging.getLogger("RayCluster")


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

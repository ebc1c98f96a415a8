"""Connect the single controller to Ray when ``scheduler.type=ray``: the one join.

AReaL 1.0.4's `RayScheduler` (and the v2.0.0 tag's, the same) uses Ray without
starting it: its first placement group fails with "Ray has not been started
yet" unless the program has called ``ray.init()``. `ray_for` does it:

- ``cluster.n_nodes > 1``: it joins a running cluster (``RAY_ADDRESS``, else
  the one ``ray start`` last started on this machine) and never starts one,
  and it refuses a cluster with fewer alive nodes than ``n_nodes``: a private
  one-node Ray would run a 4-node recipe on one machine, or wait forever for
  placement groups that cannot fit;
- ``cluster.n_nodes == 1``: ``ray.init()`` joins a cluster started here, else
  starts a Ray instance for this machine alone.

Authentication is the cluster's (Ray 2.60: token authentication when
``RAY_AUTH_MODE=token``, or when ``~/.ray/auth_token`` exists and the mode is
unset). A cluster that asks for a token the job lacks is refused naming what
to copy (docs/ray-auth.md).

AReaL's main after the v2.0.0 tag rewrote `RayScheduler` over HTTP
(`RAY_OVER_HTTP`): its workers are processes that Ray actors launch, talking
HTTP to the controller; it calls ``ray.init(address="auto")`` itself (else
starts Ray here), so `ray_for`'s connection is the one it finds, and it refuses
a cluster without GPUs. The preflight states each one's needs
(`memagent_workflow.preflight.cluster`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from importlib.util import find_spec
from typing import Any

from areal.utils import logging

logger = logging.getLogger("RayCluster")

# 1.0.4 and the v2.0.0 tag run each Ray worker as a Ray actor (RayRPCServer);
# AReaL main after the tag dropped that module with its rewrite over HTTP.
RAY_OVER_HTTP = find_spec("areal.infra.rpc.ray_rpc_server") is None

#: What a job that lacks the cluster's token must do (docs/ray-auth.md).
TOKEN_ADVICE = (
    "the cluster uses token authentication and this process has no token: copy "
    "the head node's ~/.ray/auth_token to this machine (or set RAY_AUTH_TOKEN, "
    "or RAY_AUTH_TOKEN_PATH) and run with RAY_AUTH_MODE=token (docs/ray-auth.md)"
)


@contextlib.contextmanager
def ray_for(config: Any) -> Iterator[None]:
    """Inside: Ray is initialised if ``config.scheduler.type`` is Ray's (left
    as found when it already was)."""
    if config.scheduler.type != "ray":
        yield
        return
    import ray

    if ray.is_initialized():  # e.g. the CPU job's own local instance
        yield
        return
    n_nodes = config.cluster.n_nodes
    if n_nodes > 1:
        join_cluster(n_nodes)
    else:
        ray.init()
        logger.info(f"connected to Ray: {ray.cluster_resources()}")
    try:
        yield
    finally:
        shutdown()  # disconnects; a cluster from `ray start` keeps running


def join_cluster(n_nodes: int) -> None:
    """Join the running cluster of ``n_nodes`` (or more) alive nodes, or raise
    a `RuntimeError` saying what is missing; never start one."""
    import ray
    from ray.exceptions import AuthenticationError

    address = os.environ.get("RAY_ADDRESS", "auto")  # auto: `ray start`'s record
    try:
        ray.init(address=address, include_dashboard=False)
    except ConnectionError as exc:
        # Without RAY_AUTH_MODE=token, a process given an address sends no token:
        # a cluster that wants one does not answer it either.
        unset = os.environ.get("RAY_AUTH_MODE", "").lower() != "token"
        hint = f"; if the cluster uses tokens, {TOKEN_ADVICE}" if unset else ""
        raise RuntimeError(
            f"cluster.n_nodes={n_nodes} joins a running Ray cluster, and none "
            f"answers at {address} ({exc}): start one first (`ray start` on every "
            f"node, docs/multi-node.md){hint}"
        ) from None
    except AuthenticationError as exc:
        raise RuntimeError(
            f"cannot join the Ray cluster at {address}: {TOKEN_ADVICE} ({exc})"
        ) from None
    alive = [n for n in ray.nodes() if n["Alive"]]
    if len(alive) < n_nodes:
        ray.shutdown()
        raise RuntimeError(
            f"cluster.n_nodes={n_nodes}, but the Ray cluster has {len(alive)} "
            f"alive node(s) (RAY_ADDRESS={address}): start the missing ones first"
        )
    logger.info(f"joined a Ray cluster of {len(alive)} nodes")


def shutdown() -> None:
    """Stand the node-loss watchers down, then disconnect from Ray (or stop
    the job's own instance): a watcher must not take Ray's shutdown for a
    lost cluster."""
    import ray

    from memagent_workflow.infra.ray_scheduler import stop_watchers

    stop_watchers()
    ray.shutdown()

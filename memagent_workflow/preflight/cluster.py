"""Ray (``scheduler.type=ray``): a cluster to join, and nodes that hold the
worker specs placed on them.

AReaL 1.0.4 (and the v2.0.0 tag) asks Ray for one bundle per worker: an actor
worker's ``actor.scheduling_spec`` (cpu, gpu, mem GB) as is, a rollout
worker's multiplied by its TP x PP size (areal/infra/controller/rollout_controller.py).
AReaL's main after the tag (its RayScheduler over HTTP, `RAY_OVER_HTTP`) asks
for one bundle per role and node, holding that role's workers on the node
(their specs summed; PACK), scales the rollout spec the same way, refuses a
cluster without GPUs and ``SchedulingSpec.additional_bash_cmds``, and calls
``ray.init(address="auto")`` itself. Either way a node's GPUs are filled with
workers, so a node needs the sum of the specs of the workers on its GPUs;
``mem: 64`` on 8 GPUs is 512 GB of Ray's ``memory`` resource, which Ray sets
to about 70% of the node's free RAM.

``examples/train.py`` calls ``ray.init()``: it joins the cluster started with
``ray start`` (or ``RAY_ADDRESS``), and without one starts Ray on this machine
alone, which holds a one-node run only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memagent_workflow.infra.ray_cluster import RAY_OVER_HTTP
from memagent_workflow.preflight.placement import Bundle, place
from memagent_workflow.preflight.probes import RayNode
from memagent_workflow.preflight.verdict import Check, fail, not_applicable, ok

if TYPE_CHECKING:
    from memagent_workflow.preflight.run import Run

FAMILY = "ray"
RAY_MEMORY_SHARE = 0.7  # Ray's default memory resource: RAM less its object store


@dataclass(frozen=True)
class NodeNeed:
    """What the workers on one node's GPUs ask Ray for."""

    workers: int
    cpus: float
    gpus: float
    memory_bytes: float


def per_gpu_spec(run: Run) -> tuple[float, float]:
    """(cpu, mem GB) per GPU; a rollout worker's spec is scaled by its GPUs."""
    spec = run.config.actor.scheduling_spec[0]
    return spec.cpu / max(1, spec.gpu), spec.mem / max(1, spec.gpu)


def node_need(run: Run) -> NodeNeed:
    """The fullest node: its GPUs (up to n_gpus_per_node) hold workers."""
    lay, cluster = run.layout, run.config.cluster
    gpus = min(lay.gpus, cluster.n_gpus_per_node) if cluster.n_gpus_per_node else 0
    cpu, mem = per_gpu_spec(run)
    if gpus == 0:  # CPU workers: one per role and rank on the node
        workers = lay.rollout_servers + (0 if run.is_eval else max(1, lay.actor_gpus))
        spec = run.config.actor.scheduling_spec[0]
        return NodeNeed(workers, workers * spec.cpu, 0, workers * spec.mem * 2**30)
    return NodeNeed(gpus, gpus * cpu, gpus, gpus * mem * 2**30)


def cpu_bundles(run: Run) -> list[Bundle]:
    """A bundle per CPU worker with a process of its own (forks cost nothing)."""
    lay, cfg = run.layout, run.config
    roles = [("rollout", lay.rollout_servers)]
    if not run.is_eval:
        roles.append(("actor", max(1, lay.actor_gpus)))
    bundles = []
    for role, count in roles:
        spec = (getattr(cfg, role).scheduling_spec or cfg.actor.scheduling_spec)[0]
        bundles += [
            Bundle(f"{role}/{i}", spec.cpu, spec.mem * 2**30) for i in range(count)
        ]
    return bundles


def check_cpu_placement(run: Run, nodes: list[RayNode]) -> Check:
    """Whether the CPU workers' bundles fit the nodes, and where they would go."""
    name, bundles = "cluster and placement", cpu_bundles(run)
    listed = "; ".join(
        f"{n.name}: CPU {n.cpus:g}, memory {n.memory_bytes / 2**30:.1f} GiB"
        for n in nodes[:8]
    ) + ("; ..." if len(nodes) > 8 else "")
    needed = "a bundle per worker: " + ", ".join(b.describe() for b in bundles)
    placement = place(bundles, nodes)
    if placement.unplaced is not None:
        free = "; ".join(
            f"{node} has CPU {c:g}, memory {m / 2**30:.1f} GiB left"
            for node, (c, m) in (placement.left or {}).items()
        )
        return fail(
            FAMILY,
            name,
            listed,
            needed,
            f"{placement.unplaced.describe()} fits on no node ({free}): the "
            "placement group would wait until the start-up timeout; lower "
            "actor.scheduling_spec cpu/mem, or give the nodes more",
        )
    return ok(FAMILY, name, listed, f"{needed}; placed: {placement.describe()}")


def _fits(node: RayNode, need: NodeNeed) -> list[str]:
    short = []
    if node.cpus < need.cpus:
        short.append(f"CPU {node.cpus:g} < {need.cpus:g}")
    if node.gpus < need.gpus:
        short.append(f"GPU {node.gpus:g} < {need.gpus:g}")
    if node.memory_bytes < need.memory_bytes:
        short.append(
            f"memory {node.memory_bytes / 2**30:.0f} GiB < {need.memory_bytes / 2**30:.0f} GiB"
        )
    return short


HTTP_BUNDLES = "; one bundle per role and node (AReaL main's RayScheduler)"
HTTP_FIX = (
    "AReaL's RayScheduler over HTTP (AReaL main after v2.0.0) runs on GPU "
    "clusters only, without additional_bash_cmds (use env_vars): use "
    "scheduler.type=local on this machine, or AReaL 1.0.4 or the v2.0.0 tag"
)


def http_scheduler_refuses(run: Run) -> str | None:
    """What AReaL main's RayScheduler refuses in this config, if anything."""
    bash = [
        role
        for role in ("actor", "rollout")
        if any(
            s.additional_bash_cmds for s in getattr(run.config, role).scheduling_spec
        )
    ]
    if bash:
        return f"{'/'.join(bash)}.scheduling_spec sets additional_bash_cmds"
    return None


def check_ray(run: Run) -> Check:
    name = "cluster and placement"
    if run.scheduler != "ray":
        return not_applicable(FAMILY, name, f"scheduler.type {run.scheduler or 'null'}")
    need = node_need(run)
    needed = (
        f"per node: {need.workers} workers x spec = CPU {need.cpus:g}, GPU "
        f"{need.gpus:g}, memory {need.memory_bytes / 2**30:.0f} GiB"
        + (HTTP_BUNDLES if RAY_OVER_HTTP else "")
    )
    if RAY_OVER_HTTP and (refused := http_scheduler_refuses(run)):
        return fail(FAMILY, name, refused, needed, HTTP_FIX)
    fix = (
        "lower actor.scheduling_spec mem/cpu (per worker; x workers per node), or "
        "use nodes with more"
    )
    n_nodes = run.config.cluster.n_nodes
    state = run.ray_state
    if state.error is not None:
        if n_nodes > 1:
            return fail(
                FAMILY,
                name,
                f"no cluster reachable ({state.error})",
                f"a Ray cluster of {n_nodes} nodes; " + needed,
                "start Ray on every node first: ray start --head on this one, "
                "ray start --address=HEAD_IP:6379 on the others",
            )
        if RAY_OVER_HTTP and not run.gpus:
            return fail(FAMILY, name, "no GPU on this machine", needed, HTTP_FIX)
        if run.job_provides_inputs:
            return not_applicable(
                FAMILY, name, f"{run.hook} starts its own local Ray instance"
            )
        host = run.hardware.host()
        node = RayNode(
            "this machine (ray.init() starts Ray here)",
            host.cpus,
            len(run.gpus),
            host.memory_bytes * RAY_MEMORY_SHARE,
        )
        nodes = [node]
    else:
        nodes = state.nodes
        if len(nodes) < n_nodes:
            return fail(
                FAMILY,
                name,
                f"{len(nodes)} alive node(s)",
                f"{n_nodes} nodes (cluster.n_nodes); " + needed,
                "join the missing nodes: ray start --address=HEAD_IP:6379",
            )
    if RAY_OVER_HTTP and not any(n.gpus for n in nodes):
        return fail(FAMILY, name, f"no GPU on {len(nodes)} node(s)", needed, HTTP_FIX)
    if need.gpus == 0:  # CPU workers: a bundle each, packed onto the nodes
        return check_cpu_placement(run, nodes)
    bad = {n.name: _fits(n, need) for n in nodes}
    bad = {k: v for k, v in bad.items() if v}
    listed = "; ".join(
        f"{n.name}: CPU {n.cpus:g}, GPU {n.gpus:g}, memory {n.memory_bytes / 2**30:.0f} GiB"
        for n in nodes[:4]
    ) + ("; ..." if len(nodes) > 4 else "")
    usable = len(nodes) - len(bad)
    if usable < n_nodes:
        short = "; ".join(f"{k}: {', '.join(v)}" for k, v in list(bad.items())[:3])
        return fail(
            FAMILY,
            name,
            listed,
            needed,
            f"placement groups would time out ({short}): {fix}",
        )
    return ok(FAMILY, name, listed, needed)

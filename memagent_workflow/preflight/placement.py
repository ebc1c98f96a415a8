"""Where Ray would put CPU workers: one bundle per worker, packed onto nodes.

AReaL 1.0.4 asks Ray for a placement group per rollout worker and one per
role for the actor's ranks, a bundle per worker (``{"CPU": cpu, "memory":
mem GiB}`` on a CPU cluster; strategy PACK), and forks the eval-rollout worker
and a colocated reference into the same bundles at no cost. PACK fills a node
before the next; a bundle that no node has room for left waits until
AReaL's start-up timeout. `place` packs the bundles first-fit, largest first,
which is what PACK does with groups of one bundle, and says which one fits
nowhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from memagent_workflow.preflight.probes import RayNode


@dataclass(frozen=True)
class Bundle:
    worker: str  # "actor/0", "rollout/1"
    cpus: float
    memory_bytes: float

    def describe(self) -> str:
        return f"{self.worker} (CPU {self.cpus:g}, memory {self.memory_bytes / 2**30:g} GiB)"


@dataclass
class Placement:
    """Each bundle's node, or the first bundle that fits on none."""

    node_of: dict[str, str]
    unplaced: Bundle | None = None
    left: dict[str, tuple[float, float]] | None = None  # node -> (CPU, memory) free

    def describe(self) -> str:
        return ", ".join(f"{w} -> {n}" for w, n in self.node_of.items()) or "nothing"


def place(bundles: list[Bundle], nodes: list[RayNode]) -> Placement:
    """First-fit, largest bundle first, over ``nodes`` in their order."""
    free = {n.name: [n.cpus, n.memory_bytes] for n in nodes}
    node_of: dict[str, str] = {}
    for bundle in sorted(bundles, key=lambda b: (-b.cpus, -b.memory_bytes)):
        node = next(
            (
                name
                for name, (cpus, memory) in free.items()
                if cpus >= bundle.cpus and memory >= bundle.memory_bytes
            ),
            None,
        )
        if node is None:
            left = {name: (c, m) for name, (c, m) in free.items()}
            return Placement(node_of, bundle, left)
        free[node][0] -= bundle.cpus
        free[node][1] -= bundle.memory_bytes
        node_of[bundle.worker] = node
    return Placement(dict(sorted(node_of.items())))

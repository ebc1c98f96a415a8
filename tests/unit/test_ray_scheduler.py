"""MemAgentRayScheduler: which node holding workers is lost, and what it does then."""

from __future__ import annotations

import socket
import threading

import pytest

from memagent_workflow.infra import ray_scheduler
from memagent_workflow.infra.ray_scheduler import MemAgentRayScheduler


def listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


def node(node_id: str, port: int, alive: bool = True) -> dict:
    return {
        "NodeID": node_id * 8,
        "Alive": alive,
        "NodeManagerAddress": "127.0.0.1",
        "NodeManagerHostname": "vm",
        "NodeManagerPort": port,
    }


@pytest.fixture
def cluster(monkeypatch):
    """Two nodes whose raylets listen; the scheduler's workers on them."""
    raylets = [listening(), listening()]
    nodes = [node(k, s.getsockname()[1]) for k, s in zip("ab", raylets, strict=True)]
    monkeypatch.setattr(ray_scheduler.ray, "nodes", lambda: nodes)
    scheduler = MemAgentRayScheduler()
    scheduler.node_of = {
        "actor/0": "a" * 8,
        "rollout/0": "b" * 8,
        "eval-rollout/0": "b" * 8,
    }
    yield scheduler, nodes, raylets
    for sock in raylets:
        sock.close()


def test_nothing_is_lost_while_every_node_is_alive_and_answers(cluster):
    scheduler, _, _ = cluster
    assert scheduler.lost() == ""


def test_a_node_ray_marks_dead_is_named_with_the_workers_it_held(cluster):
    scheduler, nodes, _ = cluster
    nodes[1]["Alive"] = False
    port = nodes[1]["NodeManagerPort"]
    assert scheduler.lost() == (
        f"Ray node vm:{port} (bbbbbbbb) was lost; it held eval-rollout/0, rollout/0"
    )


def test_a_raylet_that_refuses_is_lost_before_ray_marks_its_node(cluster):
    scheduler, nodes, raylets = cluster
    raylets[0].close()  # killed: Ray still lists the node alive for 15-30 s
    assert nodes[0]["Alive"]
    assert scheduler.lost().startswith(
        f"Ray node vm:{nodes[0]['NodeManagerPort']} (aaaaaaaa) was lost; it held actor/0"
    )


def test_a_head_that_stopped_answering_is_a_loss(cluster, monkeypatch):
    scheduler, _, _ = cluster

    def gone():
        raise ConnectionError("GCS unreachable")

    monkeypatch.setattr(ray_scheduler.ray, "nodes", gone)
    assert "the Ray cluster stopped answering" in scheduler.lost()


def test_a_run_that_stops_by_itself_is_not_ended_by_the_watcher(cluster, monkeypatch):
    scheduler, _, _ = cluster
    exits = []
    monkeypatch.setattr(ray_scheduler.os, "_exit", exits.append)
    monkeypatch.setattr(ray_scheduler, "GRACE_S", 5.0)
    stopper = threading.Thread(target=scheduler._stop, args=("Ray node x was lost",))
    stopper.start()
    scheduler._closing.set()  # the trainer's close: delete_workers()
    stopper.join(timeout=5)
    assert not stopper.is_alive() and exits == []


def test_a_run_still_going_after_the_grace_is_ended(cluster, monkeypatch):
    scheduler, _, _ = cluster
    exits, killed = [], []
    monkeypatch.setattr(ray_scheduler.os, "_exit", exits.append)
    monkeypatch.setattr(ray_scheduler.time, "sleep", lambda s: None)
    monkeypatch.setattr(ray_scheduler, "GRACE_S", 0.01)
    monkeypatch.setattr(ray_scheduler.ray, "kill", lambda a, **k: killed.append(a))
    scheduler._worker_info_by_id = {
        "actor/0": type("Info", (), {"actor": "actor-handle"})()
    }
    scheduler._stop("Ray node x was lost")
    assert exits == [ray_scheduler.NODE_LOST_EXIT] and killed == ["actor-handle"]

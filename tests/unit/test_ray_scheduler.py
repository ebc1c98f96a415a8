"""MemAgentRayScheduler's node watcher: which node holding workers is lost,
when (several failed probes, or Ray's verdict), and what it does then."""

from __future__ import annotations

import socket
import threading

import pytest

from memagent_workflow.infra import node_watch, ray_scheduler
from memagent_workflow.infra.node_watch import STRIKE_WINDOW_S, STRIKES
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


class Clock:
    """``time.monotonic`` of the watcher, moved by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(cluster) -> Clock:
    fake = Clock()
    cluster[0].watch.clock = fake
    return fake


@pytest.fixture
def cluster(monkeypatch):
    """Two nodes whose raylets listen; the scheduler's workers on them."""
    raylets = [listening(), listening()]
    nodes = [node(k, s.getsockname()[1]) for k, s in zip("ab", raylets, strict=True)]
    monkeypatch.setattr(node_watch.ray, "nodes", lambda: nodes)
    monkeypatch.setattr(node_watch.ray, "is_initialized", lambda: True)
    scheduler = MemAgentRayScheduler()
    for worker, node_id in (
        ("actor/0", "a"),
        ("rollout/0", "b"),
        ("eval-rollout/0", "b"),
    ):
        scheduler.watch.add(worker, node_id * 8)
    yield scheduler, nodes, raylets
    for sock in raylets:
        sock.close()


def probes(scheduler, clock: Clock, n: int) -> list[str]:
    """``n`` watcher probes, ``POLL_S`` apart."""
    found = []
    for _ in range(n):
        found.append(scheduler.watch.check())
        clock.now += node_watch.POLL_S
    return found


def test_nothing_is_lost_while_every_node_is_alive_and_answers(cluster, clock):
    scheduler, _, _ = cluster
    assert probes(scheduler, clock, 5) == [""] * 5
    assert scheduler.lost() == ""


def test_a_node_ray_marks_dead_is_lost_at_once_named_with_its_workers(cluster, clock):
    scheduler, nodes, _ = cluster
    nodes[1]["Alive"] = False
    port = nodes[1]["NodeManagerPort"]
    assert scheduler.watch.check() == (
        f"Ray node vm:{port} (bbbbbbbb) was lost; it held eval-rollout/0, rollout/0"
    )


def test_a_single_refused_probe_is_not_a_loss(cluster, clock, monkeypatch):
    scheduler, nodes, _ = cluster
    refusals = iter([False])  # node a's raylet refuses once, then answers
    real = node_watch.raylet_answers

    def answers(n: dict, timeout: float = 2.0) -> bool:
        return next(refusals, True) if n is nodes[0] else real(n, timeout)

    monkeypatch.setattr(node_watch, "raylet_answers", answers)
    assert probes(scheduler, clock, 2 * STRIKES) == [""] * (2 * STRIKES)


def test_a_raylet_that_keeps_refusing_is_lost_after_the_strikes(cluster, clock):
    scheduler, nodes, raylets = cluster
    raylets[0].close()  # killed: Ray still lists the node alive for 15-30 s
    assert nodes[0]["Alive"]
    found = probes(scheduler, clock, STRIKES)
    assert found[:-1] == [""] * (STRIKES - 1)
    assert found[-1].startswith(
        f"Ray node vm:{nodes[0]['NodeManagerPort']} (aaaaaaaa) was lost; it held actor/0"
    )


def test_strikes_must_span_the_window(cluster, clock):
    """Quick probes in a row (e.g. the second look's) are not enough alone."""
    scheduler, _, raylets = cluster
    raylets[0].close()
    found = [scheduler.watch.check() for _ in range(STRIKES + 2)]  # no time passes
    assert found == [""] * (STRIKES + 2)
    clock.now += STRIKE_WINDOW_S
    assert scheduler.watch.check().startswith("Ray node vm:")


def test_one_node_table_error_is_not_a_loss_but_a_head_gone_is(
    cluster, clock, monkeypatch
):
    scheduler, nodes, _ = cluster
    answers = [ConnectionError("GCS hiccup"), nodes]

    def flaky():
        answer = answers.pop(0) if answers else ConnectionError("GCS unreachable")
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(node_watch.ray, "nodes", flaky)
    assert probes(scheduler, clock, 2) == ["", ""]  # one hiccup, then answers
    found = probes(scheduler, clock, STRIKES)
    assert found[:-1] == [""] * (STRIKES - 1)
    assert found[-1].startswith("the Ray cluster stopped answering")


def test_a_ray_shut_down_is_the_runs_end_not_a_loss(cluster, clock, monkeypatch):
    scheduler, _, _ = cluster

    def not_started():
        raise RuntimeError("Ray has not been started yet")

    monkeypatch.setattr(node_watch.ray, "nodes", not_started)
    monkeypatch.setattr(node_watch.ray, "is_initialized", lambda: False)
    assert probes(scheduler, clock, 2 * STRIKES) == [""] * (2 * STRIKES)


def test_the_watcher_does_not_stop_a_run_over_one_refusal(cluster, monkeypatch):
    """The watcher's own thread, fast: a refused knock and a node-table error
    among answers never reach `_stop`."""
    scheduler, nodes, _ = cluster
    monkeypatch.setattr(node_watch, "POLL_S", 0.01)
    looks = iter(["refused", "error"])
    real_nodes = node_watch.ray.nodes

    def nodes_once_failing():
        if next(looks, None) == "error":
            raise ConnectionError("GCS hiccup")
        return real_nodes()

    stops: list[str] = []
    monkeypatch.setattr(node_watch.ray, "nodes", nodes_once_failing)
    monkeypatch.setattr(scheduler.watch, "_stop", lambda lost: stops.append(lost))
    scheduler.watch.start()
    threading.Event().wait(0.5)  # dozens of polls
    scheduler.stand_down()
    assert stops == [] and not scheduler.watch._thread.is_alive()


def test_a_run_that_stops_by_itself_is_not_ended_by_the_watcher(cluster, monkeypatch):
    scheduler, _, _ = cluster
    exits = []
    monkeypatch.setattr(node_watch.os, "_exit", exits.append)
    monkeypatch.setattr(node_watch, "GRACE_S", 5.0)
    stopper = threading.Thread(
        target=scheduler.watch._stop, args=("Ray node x was lost",)
    )
    stopper.start()
    scheduler.stand_down()  # the trainer's close
    stopper.join(timeout=5)
    assert not stopper.is_alive() and exits == []


def test_a_node_that_answers_again_at_the_second_look_is_not_killed(
    cluster, monkeypatch
):
    scheduler, _, _ = cluster  # every node answers when looked at again
    exits, killed = [], []
    monkeypatch.setattr(node_watch.os, "_exit", exits.append)
    monkeypatch.setattr(node_watch, "GRACE_S", 0.01)
    monkeypatch.setattr(node_watch, "STRIKE_WINDOW_S", 0.02)
    monkeypatch.setattr(ray_scheduler.ray, "kill", lambda a, **k: killed.append(a))
    assert scheduler.watch._stop("Ray node x was lost") is False
    assert exits == [] and killed == []


def test_a_run_still_going_after_the_grace_is_ended(cluster, monkeypatch):
    scheduler, nodes, _ = cluster
    nodes[0]["Alive"] = False  # still dead at the second look
    exits, killed = [], []
    monkeypatch.setattr(node_watch.os, "_exit", exits.append)
    monkeypatch.setattr(node_watch.time, "sleep", lambda s: None)
    monkeypatch.setattr(node_watch, "GRACE_S", 0.01)
    monkeypatch.setattr(node_watch, "STRIKE_WINDOW_S", 0.02)
    monkeypatch.setattr(ray_scheduler.ray, "is_initialized", lambda: True)
    monkeypatch.setattr(ray_scheduler.ray, "kill", lambda a, **k: killed.append(a))
    scheduler._worker_info_by_id = {
        "actor/0": type("Info", (), {"actor": "actor-handle"})()
    }
    scheduler.watch._stop("Ray node x was lost")
    assert exits == [ray_scheduler.NODE_LOST_EXIT] and killed == ["actor-handle"]


def test_deleted_roles_leave_the_watch(cluster, clock):
    scheduler, nodes, _ = cluster
    scheduler.watch.forget_role("rollout")
    scheduler.watch.forget_role("eval-rollout")
    nodes[1]["Alive"] = False  # its workers are gone already: nodes may go
    assert scheduler.watch.check() == "" and set(scheduler.node_of) == {"actor/0"}


class Controller:
    """An AReaL controller's teardown: it deletes its role's workers."""

    def __init__(self, scheduler: MemAgentRayScheduler, role: str) -> None:
        self.scheduler, self.role = scheduler, role

    def destroy(self) -> None:
        self.scheduler.delete_workers(self.role)


class Closes:
    def finalize(self) -> None: ...

    def close(self) -> None: ...


def test_the_trainers_close_stands_the_watcher_down(cluster, clock):
    """AReaL 1.0.4's `PPOTrainer.close` (run as it is) deletes each role's
    workers, never all at once: the product trainer's close stands the
    watcher down, even for workers no controller deleted."""
    from memagent_workflow.trainer.ppo_trainer import MemAgentPPOTrainer

    scheduler, nodes, _ = cluster
    scheduler.watch.start()
    trainer = MemAgentPPOTrainer.__new__(MemAgentPPOTrainer)
    trainer.built, trainer.scheduler = True, scheduler
    trainer.saver = trainer.stats_logger = Closes()
    trainer.eval_rollout = trainer.teacher = trainer.ref = trainer.critic = None
    trainer.rollout = Controller(scheduler, "rollout")
    trainer.actor = Controller(scheduler, "actor")
    trainer.close()
    assert scheduler.watch.closing.is_set()
    assert not scheduler.watch._thread.is_alive()
    assert set(scheduler.node_of) == {"eval-rollout/0"}  # left by no controller
    nodes[1]["Alive"] = False
    assert scheduler.watch.check() == ""


def test_the_jobs_ray_shutdown_stops_the_watchers_first(cluster, monkeypatch):
    from memagent_workflow.infra import ray_cluster

    scheduler, _, _ = cluster
    ray_scheduler._WATCHED.add(scheduler)
    scheduler.watch.start()
    seen = []
    monkeypatch.setattr(
        "ray.shutdown", lambda: seen.append(scheduler.watch._thread.is_alive())
    )
    ray_cluster.shutdown()
    assert seen == [False]

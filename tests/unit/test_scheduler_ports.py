"""Ports unique per run, training's randomness untouched, a bounded worker start
(memagent_workflow.infra.scheduler)."""

from __future__ import annotations

import random
import socket
import sys
import time

import numpy as np
import pytest
import torch
from areal.api import Worker
from areal.api.cli_args import NameResolveConfig
from areal.infra import LocalScheduler
from areal.infra.scheduler.local import WorkerInfo
from areal.infra.utils.proc import run_with_streaming_logs
from areal.utils import name_resolve, names, seeding

from memagent_workflow.infra.scheduler import (
    MemAgentLocalScheduler,
    WorkerPortError,
    private_random,
)


@pytest.fixture(autouse=True)
def default_name_resolve():
    """The schedulers reconfigure name_resolve for this process; put it back."""
    yield
    name_resolve.reconfigure(NameResolveConfig())


def scheduler(cls, tmp_path, trial: str = "t") -> LocalScheduler:
    (tmp_path / "name_resolve").mkdir(exist_ok=True)
    return cls(
        log_dir=str(tmp_path / "logs"),
        experiment_name="ports",
        trial_name=trial,
        nfs_record_root=str(tmp_path / "name_resolve"),
        startup_timeout=60,
    )


def test_private_random_leaves_the_seeded_stream_alone():
    random.seed(7)
    state = random.getstate()
    with private_random():
        inside = [random.random() for _ in range(3)]
    assert random.getstate() == state
    random.seed(7)
    assert inside != [random.random() for _ in range(3)]


def test_two_runs_with_one_seed_draw_different_ports(tmp_path):
    """What two runs with the same `seed` do when their workers start."""

    def ports(cls, trial: str) -> list[int]:
        seeding.set_random_seed(1, key="trainer0")  # as PPOTrainer.__init__
        return scheduler(cls, tmp_path, trial)._allocate_ports(2)

    # AReaL's own scheduler: the same ports in both runs (the collision).
    assert ports(LocalScheduler, "a") == ports(LocalScheduler, "b")
    assert ports(MemAgentLocalScheduler, "a") != ports(MemAgentLocalScheduler, "b")


def test_port_choice_does_not_change_training_randomness(tmp_path):
    """After the scheduler has drawn ports, `random`, numpy and torch draw what
    they draw right after seeding with `config.seed`: model init, data order
    and sampling seeds in this process are what they were without the ports."""

    def draws() -> tuple:
        return random.random(), float(np.random.rand()), float(torch.rand(1))

    seeding.set_random_seed(1, key="trainer0")
    expected = draws()
    sched = scheduler(MemAgentLocalScheduler, tmp_path)
    seeding.set_random_seed(1, key="trainer0")
    assert len(set(sched._allocate_ports(2) + sched._allocate_ports(2))) == 4
    assert draws() == expected
    assert seeding.get_seed() == 1 + seeding._seed_from_key("trainer0")


def _worker(sched: LocalScheduler, cmd: list[str], port: int) -> WorkerInfo:
    log = sched.log_dir / "actor.log"
    proc = run_with_streaming_logs(cmd, log, sched.log_dir / "merged.log", "actor")
    worker = Worker(id="actor/0", ip="127.0.0.1", worker_ports=[str(port), "0"])
    return WorkerInfo(
        worker=worker,
        process=proc,
        role="actor",
        gpu_devices=[],
        created_at=time.time(),
        log_file=str(log),
    )


def test_a_worker_whose_port_is_taken_stops_the_start_naming_the_port(tmp_path):
    """The rpc worker's server (werkzeug) cannot bind: AReaL would wait for its
    /health forever; here the start fails once the worker has exited."""
    sched = scheduler(MemAgentLocalScheduler, tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        bind = (
            "from werkzeug.serving import make_server; "
            f"make_server('127.0.0.1', {port}, lambda e, r: [])"
        )
        info = _worker(sched, [sys.executable, "-c", bind], port)
        start = time.monotonic()
        with pytest.raises(WorkerPortError, match=f"port {port}") as err:
            sched._wait_until_registered(info)
    assert time.monotonic() - start < 30
    assert "another program" in str(err.value)
    assert f"Port {port} is in use" in str(err.value)  # the worker's own words


def test_a_worker_counts_as_started_once_it_registers_its_port(tmp_path):
    sched = scheduler(MemAgentLocalScheduler, tmp_path)
    info = _worker(sched, [sys.executable, "-c", "import time; time.sleep(60)"], 4321)
    key = names.worker_discovery("ports", "t", "actor", 0)
    try:
        name_resolve.add(key, "127.0.0.1:4321", replace=True)
        sched._wait_until_registered(info)  # returns: registered, alive
        name_resolve.add(key, "127.0.0.1:9999", replace=True)  # someone else's
        info.process.kill()
        with pytest.raises(Exception, match="port 4321"):
            sched._wait_until_registered(info)
    finally:
        info.process.kill()


async def test_a_fork_answered_by_another_run_is_forked_again(tmp_path, monkeypatch):
    """Two runs with one seed: the parent worker of each draws the same port for
    its forked (eval-rollout) worker, and AReaL's readiness check is answered
    by whichever run bound it. The fork that is not registered is undone and
    forked again on the next port."""
    sched = scheduler(MemAgentLocalScheduler, tmp_path)
    target = _worker(sched, [sys.executable, "-c", "pass"], 1000)
    forked_ports = iter([15000, 15001])
    calls: list[str] = []

    async def areal_fork(self, session, role, idx, target_wi, target_role, command):
        port = next(forked_ports)
        calls.append(f"fork {port}")
        if port == 15001:  # this fork's own worker registers, and answers
            key = names.worker_discovery("ports", "t", role, idx)
            name_resolve.add(key, f"127.0.0.1:{port}", replace=True)
        worker = Worker(id=f"{role}/{idx}", ip="127.0.0.1", worker_ports=[str(port)])
        return WorkerInfo(
            worker=worker, process=None, role=role, gpu_devices=[],
            created_at=time.time(), log_file=str(tmp_path / "x.log"),
        )  # fmt: skip

    async def kill(self, session, role, idx, target_wi):
        calls.append(f"kill {role}/{idx}")

    monkeypatch.setattr(LocalScheduler, "_fork_single_worker", areal_fork)
    monkeypatch.setattr(LocalScheduler, "_kill_forked_worker", kill)
    info = await sched._fork_single_worker(
        None, "eval-rollout", 0, target, "rollout", None
    )
    assert info.worker.worker_ports == ["15001"]
    assert calls == ["fork 15000", "kill eval-rollout/0", "fork 15001"]
    sched._wait_until_registered(info)  # registered: returns at once


def test_the_controllers_ports_differ_between_runs_with_one_seed(monkeypatch):
    """The trainer's own controllers draw ports too, with AReaL's find_free_ports
    from the seeded `random`: the rollout controller its callback server's (in
    ``_init_rollout``), the train controller its gloo group's (in
    ``create_process_group``). Two runs with one seed must not draw the same."""
    from types import SimpleNamespace

    from areal import PPOTrainer
    from areal.utils.network import find_free_ports

    from memagent_workflow.trainer.ppo_trainer import MemAgentPPOTrainer

    drawn: list[int] = []

    def draw(*_args, **_kwargs) -> None:
        drawn.append(find_free_ports(1)[0])

    class Actor:  # an engine class: its controller creates the gloo group
        def __init__(self, config=None):
            pass

        @classmethod
        def as_controller(cls, config, scheduler, skip_tied_groups):
            return cls()

        create_process_group = draw

    monkeypatch.setattr(PPOTrainer, "_init_rollout", draw)
    monkeypatch.setattr(PPOTrainer, "_create_train_engine", draw)
    trainer = object.__new__(MemAgentPPOTrainer)
    trainer.actor_cls, trainer.scheduler = Actor, None
    trainer.config = SimpleNamespace(
        actor="the actor's config",
        memagent=SimpleNamespace(skip_tied_groups=False),
    )

    def one_run() -> tuple[list[int], float]:
        seeding.set_random_seed(1, key="trainer0")  # as PPOTrainer.__init__
        drawn.clear()
        trainer._init_rollout(None)  # the rollout controller
        trainer._create_train_engine(
            "the actor's config", SimpleNamespace(backend="fsdp", parallel=None)
        )  # the actor's controller
        trainer._create_train_engine(
            "a reference model", SimpleNamespace(backend="megatron", parallel=None)
        )  # AReaL's engine classes
        return list(drawn), random.random()

    runs = [one_run() for _ in range(3)]
    for position in range(3):  # three equal draws of 22767 ports: a seeded one
        assert len({ports[position] for ports, _ in runs}) > 1, position
    assert len({after for _, after in runs}) == 1  # training's stream untouched


def test_the_weight_update_port_differs_between_runs_with_one_seed(monkeypatch):
    """The actor draws its xccl group's master port with find_free_ports from
    the seeded `random`, in ``_init_weight_update_from_distributed``."""
    from areal.engine.fsdp_engine import FSDPEngine
    from areal.utils.network import find_free_ports

    from memagent_workflow.trainer.actor import MemAgentPPOActor

    drawn: list[int] = []
    monkeypatch.setattr(
        FSDPEngine,
        "_init_weight_update_from_distributed",
        lambda self, meta: drawn.append(find_free_ports(1)[0]),
    )
    actor = object.__new__(MemAgentPPOActor)
    after = set()
    for _ in range(3):
        seeding.set_random_seed(1, key="trainer0")
        actor._init_weight_update_from_distributed(None)
        after.add(random.random())
    assert len(set(drawn)) > 1  # three equal draws of 22767 ports: a seeded one
    assert len(after) == 1  # training's stream untouched


def test_a_forked_worker_gets_the_start_up_bound_not_sixty_seconds(
    tmp_path, monkeypatch
):
    """AReaL waits 60 s for a forked worker's /health; a loaded machine needs more."""
    import asyncio

    from memagent_workflow.infra.scheduler import MIN_START_TIMEOUT_S

    asked: list[float] = []

    async def wait(session, host, port, timeout=60):
        asked.append(timeout)
        return True

    monkeypatch.setattr(LocalScheduler, "_wait_for_fork_ready", staticmethod(wait))
    sched = scheduler(MemAgentLocalScheduler, tmp_path)
    assert asyncio.run(sched._wait_for_fork_ready(None, "127.0.0.1", 1))
    assert asked == [MIN_START_TIMEOUT_S]  # startup_timeout=60 here: the floor wins

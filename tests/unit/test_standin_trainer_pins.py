"""Pins on the AReaL 1.0.4 internals that ``standin.trainer`` and ``standin.backend``
mirror or rely on: an AReaL upgrade must break these tests, not the CPU runs.

`StandinPPOTrainer` overrides two private methods of `PPOTrainer`
(``_init_rollout``, ``_create_train_engine``) to swap the engine classes, and
`StandinSGLangEngine` replaces the private ``_engine`` of `RemoteSGLangEngine`.
When one of these tests fails: re-read the AReaL method named in the message,
bring the stand-in's mirror in line with it, then update the pin here.
"""

from __future__ import annotations

import hashlib
import inspect
from types import SimpleNamespace

import areal
import pytest
from areal import PPOTrainer
from areal.api.cli_args import InferenceEngineConfig
from areal.engine import FSDPPPOActor, RemoteSGLangEngine
from areal.infra import LocalScheduler, RayScheduler, RemoteInfEngine, RolloutController
from areal.infra.controller.train_controller import TrainController

from standin.backend import StandinBackend, StandinSGLangEngine
from standin.trainer import StandinPPOTrainer

# sha256 of the methods' source lines, stripped (see `digest`), in areal 1.0.4.
PINNED = {
    "PPOTrainer._init_rollout": "f582539f2d5e095c1306565abd8df4032e257c98d9f068dc1d812bb23b010760",
    "PPOTrainer._create_train_engine": "0866b13d5da89e32be696a8e5ed529d3992e4a601855a6b2e8767ea487a4517b",
    "PPOTrainer._init_scheduler": "d5d80a1cba3e21048f6182a0d0d8cc2ccc092289066af18d47851cbef77451a1",
}


def digest(fn) -> str:
    lines = [line.strip() for line in inspect.getsource(fn).splitlines()]
    return hashlib.sha256("\n".join(x for x in lines if x).encode()).hexdigest()


def changed(what: str) -> str:
    return (
        f"AReaL {areal.__version__}: {what} changed. Re-read it and bring the "
        "stand-in's mirror (standin/trainer.py, standin/backend.py) in line, then "
        "update the pin in tests/unit/test_standin_trainer_pins.py."
    )


@pytest.mark.parametrize("name", sorted(PINNED))
def test_mirrored_method_is_unchanged(name):
    owner, method = name.split(".")
    assert digest(getattr(PPOTrainer, method)) == PINNED[name], changed(name)


def test_signatures_the_overrides_share():
    init_rollout = inspect.signature(PPOTrainer._init_rollout)
    assert list(init_rollout.parameters) == [
        "self",
        "rollout_config",
        "is_eval",
        "lora_path",
    ], changed("PPOTrainer._init_rollout's signature")
    assert init_rollout.parameters["is_eval"].default is False
    assert init_rollout.parameters["lora_path"].default is None
    create = inspect.signature(PPOTrainer._create_train_engine)
    assert list(create.parameters) == ["self", "actor_config", "alloc"], changed(
        "PPOTrainer._create_train_engine's signature"
    )
    assert list(inspect.signature(PPOTrainer._init_scheduler).parameters) == ["self"], (
        changed("PPOTrainer._init_scheduler's signature")
    )
    for scheduler in (LocalScheduler, RayScheduler):
        params = inspect.signature(scheduler).parameters
        assert "startup_timeout" in params and "exp_config" in params, changed(
            f"{scheduler.__name__}'s constructor"
        )


def test_what_the_mirrored_init_rollout_does():
    src = inspect.getsource(PPOTrainer._init_rollout)
    for fragment in (
        "engine_cls = RemoteSGLangEngine",  # the class the override replaces
        "config.max_head_offpolicyness = int(1e12)",
        'type=SchedulingStrategyType.colocation, target="rollout"',
        "spec.gpu = 0",
        "train_data_parallel_size=self.actor_alloc.parallel.dp_size",
        "controller = engine_cls.as_controller(config, self.scheduler)",
        'init_kwargs["server_infos"] = self.rollout.server_infos',
        'init_kwargs["role"] = "eval-rollout"',
        "controller.initialize(**init_kwargs)",
    ):
        assert fragment in src, changed(f"PPOTrainer._init_rollout ({fragment!r})")


def test_the_attributes_the_overrides_read_are_set_before_they_run():
    src = inspect.getsource(PPOTrainer.__init__)
    order = [
        "self.scheduler = self._init_scheduler()",
        "self.actor_alloc = ",
        "self.rollout_alloc = ",
        "self.actor = self._create_train_engine(config.actor, self.actor_alloc)",
        "self.rollout = self._init_rollout(",
        "config.rollout, is_eval=False",
        "self.eval_rollout = self._init_rollout(",
        "config.rollout, is_eval=True",
        "self.weight_update_meta = WeightUpdateMeta.from_fsdp_xccl(",
    ]
    where = [src.find(fragment) for fragment in order]
    assert -1 not in where, changed(
        f"PPOTrainer.__init__ (missing: {order[where.index(-1)]!r})"
    )
    assert where == sorted(where), changed("the order of PPOTrainer.__init__")
    # No eval-rollout engine when there is no validation set: AReaL copes.
    assert "self.eval_rollout is None" in inspect.getsource(PPOTrainer._evaluate)


def test_what_the_engine_subclass_relies_on():
    src = inspect.getsource(RemoteSGLangEngine.__init__)
    assert "self._engine = RemoteInfEngine(config, SGLangBackend())" in src, changed(
        "RemoteSGLangEngine.__init__"
    )
    assert "self._engine.launch_server(server_args)" in inspect.getsource(
        RemoteSGLangEngine.launch_server
    ), changed("RemoteSGLangEngine.launch_server")
    launch = inspect.getsource(RemoteInfEngine.launch_server)
    assert "self.backend.launch_server(server_args)" in launch, changed(
        "RemoteInfEngine.launch_server"
    )
    # StandinBackend writes the port the OS gave the stand-in back into
    # server_args: AReaL must read the address only after the launch.
    lines = [line.strip() for line in launch.splitlines()]
    launched = lines.index("process = self.backend.launch_server(server_args)")
    reads = [i for i, line in enumerate(lines) if 'server_args["port"]' in line]
    assert reads and min(reads) < launched < reads[1], changed(
        "where RemoteInfEngine.launch_server reads the server's port"
    )
    # The controllers send engine classes to workers by import path.
    path = 'f"{engine_class.__module__}.{engine_class.__name__}"'
    assert path in inspect.getsource(RolloutController._async_initialize)
    assert path in inspect.getsource(TrainController.initialize)
    assert "train_engine=cls" in inspect.getsource(FSDPPPOActor.as_controller)


def test_the_bucket_size_is_read_from_the_meta_each_update():
    from areal.engine.fsdp_engine import FSDPEngine

    src = inspect.getsource(FSDPEngine._update_weights_from_distributed)
    assert "meta.weight_chunked_mem_mb * 1024 * 1024" in src, changed(
        "FSDPEngine._update_weights_from_distributed"
    )


def test_the_stand_in_engine_keeps_sglang_s_protocol():
    engine = StandinSGLangEngine(InferenceEngineConfig(backend="sglang:d1"))
    assert isinstance(engine, RemoteSGLangEngine)
    assert isinstance(engine._engine, RemoteInfEngine)
    assert type(engine._engine.backend) is StandinBackend


class Recorder:
    """Stands in for the engine class: records how the override uses it."""

    calls: list = []

    def __init__(self, config):
        self.config = config

    @classmethod
    def as_controller(cls, config, scheduler):
        cls.calls.append(("as_controller", config, scheduler))
        return cls(config)

    def initialize(self, **kwargs):
        self.calls.append(("initialize", kwargs))


@pytest.mark.parametrize("spmd", [False, True])
def test_the_override_builds_what_areal_would(monkeypatch, spmd):
    from areal.api.alloc_mode import ModelAllocation
    from areal.api.cli_args import SGLangConfig

    import standin.trainer

    monkeypatch.setattr(standin.trainer, "StandinSGLangEngine", Recorder)
    if spmd:
        monkeypatch.setenv("AREAL_SPMD_MODE", "1")
    else:
        monkeypatch.delenv("AREAL_SPMD_MODE", raising=False)
    Recorder.calls = []
    trainer = SimpleNamespace(
        rollout_alloc=ModelAllocation.from_str("sglang:d1", name="rollout"),
        actor_alloc=ModelAllocation.from_str("fsdp:d1", name="actor"),
        scheduler="the scheduler",
        rollout=SimpleNamespace(server_infos=["server 0"]),
        config=SimpleNamespace(
            rollout=SimpleNamespace(backend="sglang:d1", return_routed_experts=False),
            sglang=SGLangConfig(model_path="/m", context_length=64),
            valid_dataset="a validation set",
        ),
    )
    config = InferenceEngineConfig(backend="sglang:d1", max_head_offpolicyness=2)
    rollout = StandinPPOTrainer._init_rollout(trainer, config, is_eval=False)
    evaluation = StandinPPOTrainer._init_rollout(trainer, config, is_eval=True)
    assert rollout.config.max_head_offpolicyness == 2
    assert evaluation.config.max_head_offpolicyness == int(1e12)
    assert evaluation.config.scheduling_strategy.target == "rollout"
    inits = [c[1] for c in Recorder.calls if c[0] == "initialize"]
    if spmd:  # engines connect to running servers; no controller
        assert not [c for c in Recorder.calls if c[0] == "as_controller"]
        assert inits == [{"train_data_parallel_size": 1}] * 2
        return
    assert [i["role"] for i in inits] == ["rollout", "eval-rollout"]
    assert inits[0]["server_args"]["context_length"] == 64
    assert inits[0]["server_args"]["model_path"] == "/m"
    assert "server_infos" not in inits[0]
    assert inits[1]["server_infos"] == ["server 0"]
    trainer.config.valid_dataset = None  # no validation set: no eval engine
    assert StandinPPOTrainer._init_rollout(trainer, config, is_eval=True) is None

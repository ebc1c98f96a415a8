"""A trainer whose start-up fails stops the workers it had started."""

from types import SimpleNamespace

import pytest
from areal.api.cli_args import RecoverConfig

from memagent_workflow.trainer.ppo_trainer import MemAgentPPOTrainer


class Scheduler:
    def __init__(self):
        self.deleted = []

    def delete_workers(self, role=None):
        self.deleted.append(role)


class FailsAfterWorkersStart(MemAgentPPOTrainer):
    """AReaL's start-up, cut short where the restored weights reach no server."""

    def _init_trainer(self, config, train_dataset, **kwargs):
        self.scheduler = Scheduler()  # AReaL starts the workers first
        raise RuntimeError("Failed to call method 'update_weights'")


def test_a_failed_start_stops_every_worker_and_keeps_its_error():
    config = SimpleNamespace(recover=RecoverConfig(mode="disabled"))
    trainer = FailsAfterWorkersStart.__new__(FailsAfterWorkersStart)
    with pytest.raises(RuntimeError, match="update_weights"):
        trainer.__init__(config)
    assert trainer.scheduler.deleted == [None]  # all roles


def test_a_start_that_fails_before_any_worker_only_raises():
    class FailsFirst(MemAgentPPOTrainer):
        def _init_trainer(self, config, train_dataset, **kwargs):
            raise ValueError("bad config")

    config = SimpleNamespace(recover=RecoverConfig(mode="disabled"))
    with pytest.raises(ValueError, match="bad config"):
        FailsFirst(config)


class ClosesOnFailure(MemAgentPPOTrainer):
    """AReaL 2.0.0 after its tag: ``PPOTrainer.__init__`` calls ``self.close()``
    when its start-up fails, then re-raises (areal/trainer/rl_trainer.py)."""

    def _init_trainer(self, config, train_dataset, **kwargs):
        self.scheduler = Scheduler()
        try:
            raise OSError("tokenizer not found at /no/such/model")
        except Exception:
            self.close()  # before the saver, stats logger and engines exist
            raise


def test_a_start_failing_where_areal_closes_the_trainer_keeps_its_cause():
    config = SimpleNamespace(recover=RecoverConfig(mode="disabled"))
    trainer = ClosesOnFailure.__new__(ClosesOnFailure)
    # AReaL's close() would read trainer.saver: AttributeError instead of this
    with pytest.raises(OSError, match="tokenizer not found"):
        trainer.__init__(config)
    assert trainer.scheduler.deleted == [None]


def test_a_built_trainer_closes_through_areal(monkeypatch):
    from areal.trainer.rl_trainer import PPOTrainer

    closed = []
    monkeypatch.setattr(PPOTrainer, "close", lambda self: closed.append(self))

    class Built(MemAgentPPOTrainer):
        def _init_trainer(self, config, train_dataset, **kwargs):
            pass

    trainer = Built(SimpleNamespace(recover=RecoverConfig(mode="disabled")))
    trainer.close()
    assert closed == [trainer]


def test_areals_own_failing_start_raises_its_cause(tmp_path):
    """Through AReaL's real PPOTrainer.__init__: a tokenizer path that does not
    exist fails there first (on AReaL main after the 2.0.0 tag, inside the
    try block whose handler calls close())."""
    from standin.train import load_config

    missing = tmp_path / "no_such_model"
    config = load_config(
        ["--config", "config_cpu.yaml", "scheduler.type=null",
         f"tokenizer_path={missing}", f"cluster.fileroot={tmp_path / 'areal'}",
         f"cluster.name_resolve.nfs_record_root={tmp_path / 'name_resolve'}"]
    )  # fmt: skip
    with pytest.raises(OSError, match="no_such_model"):
        MemAgentPPOTrainer(config)

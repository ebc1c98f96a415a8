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

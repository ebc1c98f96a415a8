"""A crash while a recover checkpoint is written leaves the previous one usable."""

import os
from pathlib import Path

import pytest
from areal.api import FinetuneSpec, StepInfo
from areal.api.cli_args import RecoverConfig
from areal.utils.recover import InValidRecoverInfo, RecoverHandler, RecoverInfo

from memagent_workflow.recovery.checkpoint import (
    AtomicRecoverHandler,
    restore_interrupted_dump,
    resumable_step,
)

SPEC = FinetuneSpec(total_train_epochs=1, dataset_size=40, train_batch_size=4)


class Crash(Exception):
    pass


class Engine:
    """Writes a two-file 'checkpoint'; ``crash`` stops it after the first file."""

    crash = False

    def save(self, meta):
        os.makedirs(meta.path, exist_ok=True)
        with open(os.path.join(meta.path, "weights"), "w") as f:
            f.write(str(self.step))
        if self.crash:
            raise Crash("killed while writing")
        with open(os.path.join(meta.path, "optimizer"), "w") as f:
            f.write(str(self.step))

    def load(self, meta):
        pass


class State:
    def __init__(self, fail=False):
        self.fail = fail

    def state_dict(self):
        if self.fail:
            raise Crash("killed while writing the recover info")
        return {"n": 1}

    def load_state_dict(self, state):
        pass


def config(tmp_path):
    return RecoverConfig(
        mode="on", experiment_name="e", trial_name="t", fileroot=str(tmp_path),
        freq_steps=1,
    )  # fmt: skip


def dump(handler, engine, step, loader=None):
    engine.step = step
    info = StepInfo(epoch=0, epoch_step=step, global_step=step, steps_per_epoch=10)
    s = State()
    handler.dump(engine, info, s, s, s, loader or State())


def info_dir(tmp_path):
    return Path(RecoverHandler.recover_info_path("e", "t", str(tmp_path)))


def checkpoint(tmp_path):
    info = info_dir(tmp_path)
    step = RecoverInfo.load(str(info)).last_step_info.global_step
    ckpt = info.parent / "default" / "recover_checkpoint"
    files = {n: open(os.path.join(ckpt, n)).read() for n in sorted(os.listdir(ckpt))}
    return step, files


@pytest.mark.parametrize("where", ["model", "recover info"])
def test_a_write_cut_short_leaves_the_previous_checkpoint(tmp_path, where):
    handler = AtomicRecoverHandler(config(tmp_path), SPEC)
    engine = Engine()
    dump(handler, engine, 0)
    dump(handler, engine, 1)
    engine.crash = where == "model"
    with pytest.raises(Crash):
        dump(handler, engine, 2, loader=State(fail=where == "recover info"))
    assert resumable_step(info_dir(tmp_path)) == 1  # read before the restore too

    message = restore_interrupted_dump(config(tmp_path))
    assert "global step 1" in message
    assert checkpoint(tmp_path) == (1, {"optimizer": "1", "weights": "1"})
    assert restore_interrupted_dump(config(tmp_path)) is None  # nothing left to do


def test_a_complete_write_replaces_the_previous_checkpoint(tmp_path):
    handler = AtomicRecoverHandler(config(tmp_path), SPEC)
    engine = Engine()
    for step in range(3):
        dump(handler, engine, step)
    assert checkpoint(tmp_path) == (2, {"optimizer": "2", "weights": "2"})
    assert resumable_step(info_dir(tmp_path)) == 2
    assert not list(tmp_path.rglob("*.prev"))
    assert restore_interrupted_dump(config(tmp_path)) is None


def test_a_first_write_cut_short_means_a_fresh_start(tmp_path):
    handler = AtomicRecoverHandler(config(tmp_path), SPEC)
    engine = Engine()
    engine.crash = True
    with pytest.raises(Crash):
        dump(handler, engine, 0)
    assert resumable_step(info_dir(tmp_path)) is None
    assert restore_interrupted_dump(config(tmp_path)) is None
    with pytest.raises((FileNotFoundError, InValidRecoverInfo)):  # AReaL: a fresh start
        checkpoint(tmp_path)
    engine.crash = False
    dump(AtomicRecoverHandler(config(tmp_path), SPEC), engine, 0)
    assert checkpoint(tmp_path) == (0, {"optimizer": "0", "weights": "0"})


def test_the_handler_built_after_areal_s_load_has_the_state_it_restored(tmp_path):
    """AReaL's trainer loads with its own handler; the atomic one replacing it
    must count towards the next checkpoint from where that load left off."""
    handler = AtomicRecoverHandler(config(tmp_path), SPEC)
    engine = Engine()
    for step in range(3):
        dump(handler, engine, step)
    areal = RecoverHandler(config(tmp_path), SPEC)
    s = State()
    info = areal.load(engine, s, s, s, s)  # as PPOTrainer.__init__ does
    assert info is not None
    ours = AtomicRecoverHandler.resuming(config(tmp_path), SPEC, info)
    assert ours.freq_ctl.state_dict() == areal.freq_ctl.state_dict()
    assert ours.freq_ctl.step_ctl.total_steps == 3
    assert ours.last_step_info == areal.last_step_info
    fresh = AtomicRecoverHandler.resuming(config(tmp_path), SPEC, None)
    assert fresh.freq_ctl.step_ctl.total_steps == 0

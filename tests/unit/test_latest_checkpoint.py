"""``latest`` in a trial's checkpoint folder names its newest complete HF
checkpoint (memagent_workflow/trainer/latest.py), the one name the docs use."""

from __future__ import annotations

import getpass
import os
from pathlib import Path
from types import SimpleNamespace

from memagent_workflow.recovery.checkpoint import recover_dirs
from memagent_workflow.trainer.latest import latest_link, point_latest
from memagent_workflow.trainer.ppo_trainer import MemAgentPPOTrainer


def saved(root: Path, step: int, marker: str = "config.json") -> Path:
    folder = root / f"epoch0epochstep{step - 1}globalstep{step}"
    folder.mkdir(parents=True)
    if marker:
        (folder / marker).write_text("{}")
    return folder


def trial_root(fileroot: Path) -> Path:
    return fileroot / "checkpoints" / getpass.getuser() / "exp" / "trial0"


def test_latest_is_the_highest_complete_step_and_moves_on(tmp_path):
    default = trial_root(tmp_path) / "default"
    saved(default, 2)
    ten = saved(default, 10)
    saved(default, 12, marker="")  # a save cut short: no config.json
    (default / "recover_checkpoint").mkdir()
    link = point_latest("exp", "trial0", str(tmp_path))
    assert link == latest_link("exp", "trial0", str(tmp_path))
    assert link == trial_root(tmp_path) / "latest"
    assert link.resolve() == ten.resolve()
    assert not os.readlink(link).startswith("/")  # relative: the folder can move
    adapter = saved(default, 20, marker="adapter_config.json")  # a LoRA save
    point_latest("exp", "trial0", str(tmp_path))
    assert link.resolve() == adapter.resolve()
    assert sorted(p.name for p in link.parent.iterdir()) == ["default", "latest"]


def test_no_checkpoint_no_link(tmp_path):
    assert point_latest("exp", "trial0", str(tmp_path)) is None
    assert not (trial_root(tmp_path) / "latest").exists()


def test_the_link_is_not_taken_for_a_models_recover_folder(tmp_path):
    saved(trial_root(tmp_path) / "default", 1)
    point_latest("exp", "trial0", str(tmp_path))
    config = SimpleNamespace(
        experiment_name="exp", trial_name="trial0", fileroot=str(tmp_path)
    )
    _, models = recover_dirs(config)
    assert [m.parent.name for m in models] == ["default"]


def test_the_trainer_points_it_and_says_where(tmp_path, monkeypatch, caplog):
    saved(trial_root(tmp_path) / "default", 3)
    monkeypatch.setenv("RANK", "0")
    saver = SimpleNamespace(
        experiment_name="exp", trial_name="trial0", fileroot=str(tmp_path)
    )
    trainer = SimpleNamespace(config=SimpleNamespace(saver=saver))
    MemAgentPPOTrainer._point_latest(trainer)
    assert (trial_root(tmp_path) / "latest").resolve().name.endswith("globalstep3")
    monkeypatch.setenv("RANK", "1")  # only rank 0 writes it
    (trial_root(tmp_path) / "latest").unlink()
    MemAgentPPOTrainer._point_latest(trainer)
    assert not (trial_root(tmp_path) / "latest").exists()

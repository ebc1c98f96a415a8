"""Preflight, file systems: fileroot and name-resolve root writable or creatable,
shared across nodes, and disk for the checkpoints the saver and recover keep."""

from __future__ import annotations

import copy
import shutil
from collections import namedtuple

import pytest

from memagent_workflow.preflight import Verdict, filesystems
from memagent_workflow.preflight.filesystems import (
    check_disk,
    check_fileroot,
    check_name_resolve,
    hf_saves,
)
from tests.unit.preflight_fakes import QWEN25_7B_PARAMS, load, run_of, write_model


@pytest.fixture(scope="module")
def cfg(tmp_path_factory):
    model = write_model(tmp_path_factory.mktemp("qwen25_7b"))
    return load("config.yaml", "scheduler.type=local", f"actor.path={model}")


def rooted(cfg, fileroot, records=None, nodes=1):
    cfg = copy.deepcopy(cfg)
    cfg.cluster.fileroot = str(fileroot)
    cfg.cluster.name_resolve.nfs_record_root = str(records or fileroot)
    cfg.cluster.n_nodes = nodes
    return cfg


def test_a_folder_to_be_created_under_a_writable_one_passes(cfg, tmp_path):
    check = check_fileroot(run_of(rooted(cfg, tmp_path / "a" / "b")))
    assert check.verdict is Verdict.OK and "to be created" in check.found


def test_a_folder_below_a_file_fails(cfg, tmp_path):
    (tmp_path / "file").write_text("")
    run = run_of(rooted(cfg, tmp_path, records=tmp_path / "file" / "records"))
    assert check_name_resolve(run).verdict is Verdict.FAIL
    assert check_fileroot(run).verdict is Verdict.OK


def test_an_unwritable_folder_fails(cfg, tmp_path, monkeypatch):
    monkeypatch.setattr(filesystems, "writable", lambda folder: f"{folder}: denied")
    check = check_fileroot(run_of(rooted(cfg, tmp_path)))
    assert check.verdict is Verdict.FAIL and "denied" in check.found


def test_several_nodes_need_a_shared_file_system(cfg, tmp_path, monkeypatch):
    monkeypatch.setattr(filesystems, "on_network_fs", lambda path: (False, "ext4"))
    multi = rooted(cfg, tmp_path, nodes=4)
    assert check_fileroot(run_of(multi)).verdict is Verdict.FAIL
    assert check_fileroot(run_of(multi, shared_fs=True)).verdict is Verdict.OK
    monkeypatch.setattr(filesystems, "on_network_fs", lambda path: (True, "nfs4"))
    assert check_fileroot(run_of(multi)).verdict is Verdict.OK


def test_hf_saves_count_steps_and_epoch_ends(cfg):
    run = run_of(copy.deepcopy(cfg))
    run.train_rows = 32768  # 256 steps per epoch at batch 128
    # every 50 steps (50 ... 500: 10) and at each epoch's end (256, 512)
    assert hf_saves(run, 512) == 12
    run.config.saver.freq_epochs = None
    assert hf_saves(run, 512) == 10


def test_disk_for_checkpoints_both_ways(cfg, tmp_path, monkeypatch):
    run = run_of(rooted(cfg, tmp_path))
    run.train_rows = 32768  # 2 epochs, 512 steps: 12 HF saves (above)
    run.config.total_train_steps, run.config.total_train_epochs = None, 2
    hf = 2 * QWEN25_7B_PARAMS  # bf16
    recover = 12 * QWEN25_7B_PARAMS  # fp32 weights + Adam moments
    need = 12 * hf + 2 * recover
    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: Usage(0, 0, need + 1))
    check = check_disk(run)
    assert check.verdict is Verdict.OK and f"{need / 1e9:.0f} GB" in check.needed
    monkeypatch.setattr(shutil, "disk_usage", lambda p: Usage(0, 0, need - 1))
    assert check_disk(run).verdict is Verdict.FAIL

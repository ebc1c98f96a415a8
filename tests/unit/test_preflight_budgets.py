"""Preflight, time budgets: one group's duration against rollout.request_timeout
(a whole task under a scheduler, one call without), and setup_timeout."""

from __future__ import annotations

import copy

import pytest

from memagent_workflow.preflight import Verdict
from memagent_workflow.preflight.budgets import (
    check_request_timeout,
    check_setup_timeout,
    turns_per_episode,
)
from tests.unit.preflight_fakes import load, run_of, write_model


@pytest.fixture(scope="module")
def cfg(tmp_path_factory):
    model = write_model(tmp_path_factory.mktemp("qwen25_7b"))
    return load("config.yaml", "scheduler.type=local", f"actor.path={model}")


def with_timeout(cfg, seconds):
    cfg = copy.deepcopy(cfg)
    cfg.rollout.request_timeout = seconds
    return cfg


def test_a_group_is_max_chunks_plus_one_turns(cfg):
    assert turns_per_episode(run_of(cfg))[0] == 9


def test_timeout_too_small_for_the_group_fails(cfg):
    # 9 turns x 60 s = 540 s per group
    check = check_request_timeout(run_of(with_timeout(cfg, 300), turn_seconds=60))
    assert check.verdict is Verdict.FAIL
    assert "~9.0 min" in check.found and "1080" in check.fix


def test_timeout_with_headroom_passes(cfg):
    check = check_request_timeout(run_of(with_timeout(cfg, 3600), turn_seconds=60))
    assert check.verdict is Verdict.OK


def test_estimated_turn_includes_the_queue_behind_the_kv_cache(cfg):
    # 1024 tokens at 20/s, slowed by ~2x queueing: a group takes > 10 minutes,
    # so config.yaml's 600 s rejects every group under the single controller.
    check = check_request_timeout(run_of(with_timeout(cfg, 600)))
    assert check.verdict is Verdict.FAIL and "queued" in check.found


def test_without_a_scheduler_the_timeout_bounds_one_call(cfg):
    spmd = copy.deepcopy(with_timeout(cfg, 300))
    spmd.scheduler.type = None
    check = check_request_timeout(run_of(spmd, turn_seconds=60))
    assert check.verdict is Verdict.OK and "one model call" in check.needed
    assert check_request_timeout(run_of(spmd, turn_seconds=400)).verdict is Verdict.FAIL


def test_cpu_run_checks_time_only_when_told_a_turn():
    cpu = load("config_cpu.yaml")
    assert check_request_timeout(run_of(cpu)).verdict is Verdict.NA
    # no max_chunks and no rows read: the group cannot be bounded
    assert check_request_timeout(run_of(cpu, turn_seconds=1)).verdict is Verdict.WARN
    cpu.memagent.max_chunks = 1  # 2 turns: one chunk and the final turn
    assert check_request_timeout(run_of(cpu, turn_seconds=200)).verdict is Verdict.FAIL
    assert check_request_timeout(run_of(cpu, turn_seconds=10)).verdict is Verdict.OK


def test_turns_from_the_longest_row_without_max_chunks(cfg):
    run = run_of(copy.deepcopy(cfg))
    run.config.memagent.max_chunks = None
    run.longest_context_chars = 4 * 5000 * 3 + 1  # just over 3 chunks of 5000 tokens
    assert turns_per_episode(run)[0] == 5


def test_setup_timeout_against_a_download(cfg):
    # 15 GB at 100 MB/s + 120 s start ~ 272 s: less than 2x headroom in 300 s
    # (AReaL's default; config.yaml now gives 1800)
    assert cfg.rollout.setup_timeout == 1800
    short = copy.deepcopy(cfg)
    short.rollout.setup_timeout = 300
    check = check_setup_timeout(run_of(short))
    assert check.verdict is Verdict.WARN and "download 15 GB" in check.found
    long = copy.deepcopy(cfg)
    long.rollout.setup_timeout = 1800
    assert check_setup_timeout(run_of(long)).verdict is Verdict.OK

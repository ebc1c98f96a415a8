"""Ports one run allocated are not handed to another before they are bound
(memagent_workflow.infra.port_claims and MemAgentLocalScheduler._allocate_ports)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from areal.infra.scheduler import local as areal_local

from memagent_workflow.infra import port_claims
from memagent_workflow.infra.scheduler import MemAgentLocalScheduler


@pytest.fixture
def claims(tmp_path, monkeypatch):
    folder = tmp_path / "claims"
    folder.mkdir()
    monkeypatch.setattr(port_claims, "claims_dir", lambda: folder)
    return folder


@pytest.fixture
def other_run():
    """A live process standing for another run."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def lowest_free(monkeypatch, candidates: list[int]) -> None:
    """AReaL's port draw, made deterministic: the lowest candidates not excluded."""

    def draw(count, exclude_ports=None, **_):
        return [p for p in candidates if p not in (exclude_ports or set())][:count]

    monkeypatch.setattr(areal_local, "find_free_ports", draw)


def allocator() -> MemAgentLocalScheduler:
    scheduler = MemAgentLocalScheduler.__new__(MemAgentLocalScheduler)
    scheduler._allocated_ports = set()  # all _allocate_ports needs
    return scheduler


def test_a_port_another_live_run_claimed_is_not_handed_out(
    claims, other_run, monkeypatch
):
    (claims / "20001").write_text(str(other_run))
    lowest_free(monkeypatch, [20001, 20002, 20003])
    assert allocator()._allocate_ports(2) == [20002, 20003]
    assert (claims / "20002").read_text() == str(os.getpid())
    assert (claims / "20001").read_text() == str(other_run)  # untouched


def test_two_schedulers_never_get_the_same_port(claims, monkeypatch):
    lowest_free(monkeypatch, [20001, 20002, 20003, 20004])
    first, second = allocator()._allocate_ports(2), allocator()._allocate_ports(2)
    assert first == [20001, 20002] and second == [20003, 20004]


def test_a_claim_of_an_exited_run_is_ignored_and_removed(claims, monkeypatch):
    (claims / "20001").write_text(str(dead_pid()))
    lowest_free(monkeypatch, [20001, 20002])
    assert allocator()._allocate_ports(1) == [20001]
    assert (claims / "20001").read_text() == str(os.getpid())


def test_a_claim_is_all_or_nothing(claims, other_run):
    (claims / "20002").write_text(str(other_run))
    assert not port_claims.claim([20001, 20002])
    assert not (claims / "20001").exists()  # its own partial claim undone
    assert port_claims.claim([20001, 20003])
    port_claims.release([20001, 20002, 20003])  # only its own go
    assert sorted(p.name for p in claims.iterdir()) == ["20002"]

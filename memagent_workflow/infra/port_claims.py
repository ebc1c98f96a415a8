"""Ports allocated by a run but not yet bound, claimed for every run on this machine.

AReaL's scheduler checks that a port is free when it allocates it, but the
worker binds it only later (the ``MASTER_PORT`` of the actor's process group,
seconds after start-up). A second run allocating in between finds the port free
too, and one of the two runs then stops with ``EADDRINUSE``. A claim is a file
named after the port, holding the claiming process's id, in a folder shared by
the runs of this user; claims of processes that have exited are ignored.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

import psutil


def claims_dir() -> Path:
    """The folder of claims (one per user: another user's runs cannot write it)."""
    path = Path(tempfile.gettempdir()) / f"memagent-port-claims-{os.getuid()}"
    path.mkdir(exist_ok=True)
    return path


def _owner(claim: Path) -> int | None:
    try:
        return int(claim.read_text())
    except (OSError, ValueError):  # vanished, or caught half-written
        return None


def _live(pid: int | None) -> bool:
    return pid is not None and psutil.pid_exists(pid)


def claimed_ports() -> set[int]:
    """Ports claimed by processes still running (stale claims are removed)."""
    ports = set()
    for claim in claims_dir().iterdir():
        if not claim.name.isdigit():
            continue
        if _live(_owner(claim)):
            ports.add(int(claim.name))
        else:
            claim.unlink(missing_ok=True)
    return ports


def claim(ports: Iterable[int]) -> bool:
    """Claim every port for this process, or none (False: another run has one)."""
    folder, mine = claims_dir(), []
    for port in ports:
        path = folder / str(port)
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            owner = _owner(path)
            if owner == os.getpid():
                continue
            release(mine)
            return False
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        mine.append(port)
    return True


def release(ports: Iterable[int]) -> None:
    """Drop this process's claims on ``ports``."""
    folder = claims_dir()
    for port in ports:
        path = folder / str(port)
        if _owner(path) == os.getpid():
            path.unlink(missing_ok=True)

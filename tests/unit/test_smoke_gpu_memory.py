"""The smoke's GPU memory poll, on a faked ``nvidia-smi``: only the smoke's own
processes count (by their mark), the largest per role is kept, and a process's
role is the AReaL worker it is or runs under."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import psutil

from memagent_workflow.smoke.gpu_memory import PeakMemory, parse, role_of
from memagent_workflow.smoke.processes import MARK_ENV

MIB = 2**20


def test_parse_reads_pid_gpu_and_bytes():
    text = "123, GPU-aaa, 1024\n456, GPU-bbb, 40960\n[Not Supported]\n"
    assert parse(text) == [(123, "GPU-aaa", 1024 * MIB), (456, "GPU-bbb", 40960 * MIB)]


def test_only_marked_processes_count_and_the_peak_is_kept():
    mark = uuid.uuid4().hex
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    ours = subprocess.Popen(sleeper, env={**os.environ, MARK_ENV: mark})
    other = subprocess.Popen(sleeper)
    try:
        time.sleep(0.2)
        readings = iter([f"{ours.pid}, G0, 100\n{other.pid}, G0, 999", f"{ours.pid}, G0, 300",
                         f"{ours.pid}, G0, 200"])  # fmt: skip
        poll = PeakMemory(mark, query=lambda: next(readings), role=lambda p: "actor")
        for _ in range(3):
            poll.poll()
        assert poll.available and poll.peaks == {"actor": 300 * MIB}
    finally:
        for p in (ours, other):
            p.kill()
            p.wait()


def test_a_process_under_a_worker_takes_the_workers_role():
    worker = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys, time; "
         "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
         "time.sleep(60)", "--role", "rollout"]
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not psutil.Process(worker.pid).children() and time.monotonic() < deadline:
            time.sleep(0.1)
        (server,) = psutil.Process(worker.pid).children()
        assert role_of(server) == "rollout" and role_of(psutil.Process()) == "trainer"
    finally:
        for p in psutil.Process(worker.pid).children():
            p.kill()
        worker.kill()
        worker.wait()

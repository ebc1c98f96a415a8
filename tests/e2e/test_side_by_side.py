"""A worker port another program takes stops the CPU main job, naming the port,
in bounded time (AReaL's scheduler waited for that worker forever).

Two main jobs with one seed started at once: tests/e2e/test_train_launch.py
(its two single-controller runs); two processes building one model folder at
once: tests/unit/test_build_once.py.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

from memagent_workflow.infra.terminal import CONSOLE_LOG
from tests.e2e.launch_runs import Launched, fresh_clone, train_cmd

# The README's main job, launched by AReaL's single controller, shortened.
LAUNCH = ("scheduler.type=local",)
# How long a run may take to stop once its worker's port is taken: the worker
# imports torch and AReaL before it tries to bind (seconds to a minute on a
# loaded 2-core machine), then dies; the scheduler notices within 0.2 s.
# memagent_workflow.infra.scheduler.MIN_START_TIMEOUT_S bounds a worker that hangs.
STOP_BOUND_S = 300


def test_a_taken_worker_port_stops_the_run_naming_it(tmp_path, needle_model_dir):
    shutil.copytree(needle_model_dir, tmp_path / "model")  # built: no warm start
    clone = fresh_clone(tmp_path / "run")
    cmd = train_cmd(*LAUNCH, "valid_dataset=null", f"actor.path={tmp_path / 'model'}")
    run = Launched(cmd, clone, cwd=clone)
    started = re.compile(r"Starting worker actor/0 .*--port (\d+)")
    deadline = time.monotonic() + 600
    port = None
    while port is None:
        assert run.proc.poll() is None, run.log_path.read_text()[-4000:]
        assert time.monotonic() < deadline, "the actor worker never started"
        if match := started.search(everything_logged(run)):
            port = int(match.group(1))
        time.sleep(0.05)
    # Another program takes the port before the worker (still importing) binds.
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", port))
        taken.listen()
        start = time.monotonic()
        try:
            code = run.proc.wait(timeout=STOP_BOUND_S)
        except subprocess.TimeoutExpired:
            run.proc.kill()
            raise AssertionError(f"no stop within {STOP_BOUND_S} s") from None
        stopped_after = time.monotonic() - start
    run._log.close()
    log = everything_logged(run)
    assert code != 0
    assert f"worker actor/0 could not listen on port {port}" in log, log[-4000:]
    print(f"the run stopped {stopped_after:.0f} s after port {port} was taken")
    _no_worker_left(tmp_path)


def everything_logged(run: Launched) -> str:
    """The terminal's output and the full record the quiet terminal keeps
    (AReaL's INFO lines, such as the scheduler's worker starts, are only there)."""
    consoles = sorted(run.out.rglob(CONSOLE_LOG))
    full = "".join(p.read_text(errors="replace") for p in consoles)
    return run.log_path.read_text(errors="replace") + full


def _no_worker_left(out: Path) -> None:
    """The failed start stopped the workers it had started."""
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True)
    assert str(out) not in ps.stdout

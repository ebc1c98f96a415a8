"""The smoke's children under their phase deadlines: a phase that runs out or
fails stops the child, names the phase and the cause, and leaves no process of
the child's running, not even one that left its process group (found by the
mark every process of the smoke inherits). The children here are small Python
scripts writing the smoke's real events, so each test takes seconds."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import psutil
import pytest

from memagent_workflow.smoke.processes import (
    MARK_ENV,
    Child,
    PhaseFailed,
    Supervisor,
    cause_in,
    marked,
)

ROOT = Path(__file__).resolve().parents[2]

# A grandchild in a session of its own (as a server or a Ray worker may be):
# killing the child's process group does not reach it; its pid is written out.
DAEMON = textwrap.dedent(
    """
    import subprocess, sys
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                         start_new_session=True)
    open(sys.argv[1], "w").write(str(p.pid))
    """
)


def script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "child.py"
    path.write_text(
        "import sys, time\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from memagent_workflow.smoke.events import EventLog\n"
        "log = EventLog.from_env()\n" + textwrap.dedent(body)
    )
    return [sys.executable, str(path)]


def spawn_daemon(pid_file: Path) -> str:
    """Child code that leaves the daemon behind (its parent exits at once)."""
    return (
        "import subprocess\n"
        f"subprocess.run([sys.executable, '-c', {DAEMON!r}, {str(pid_file)!r}], "
        "check=True)\n"
    )


@pytest.fixture
def mark():
    return uuid.uuid4().hex


def supervisor(tmp_path, mark, **deadlines):
    times = {"launch": 60.0, "engine start": 60.0, **deadlines}
    return Supervisor(tmp_path / "events.jsonl", times, mark, between_s=60, poll_s=0.1)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_phase_out_of_time_is_named_and_nothing_is_left(tmp_path, mark):
    pid_file = tmp_path / "daemon.pid"
    body = spawn_daemon(pid_file) + (
        "log.start('launch'); log.switch('launch', 'engine start'); time.sleep(600)\n"
    )
    child = Child("train", script(tmp_path, body), tmp_path / "train.log", "launch")
    started = time.monotonic()
    with pytest.raises(PhaseFailed) as exc:
        supervisor(tmp_path, mark, **{"engine start": 1.0}).run(child)
    assert exc.value.phase == "engine start"
    assert "ran out of its deadline (1 s)" in exc.value.cause
    assert time.monotonic() - started < 30
    daemon = int(pid_file.read_text())
    assert not alive(daemon)  # outside the group, found by its mark
    assert marked(mark) == []


def test_a_failing_phase_names_its_error(tmp_path, mark):
    body = (
        "log.start('launch')\nraise ValueError('actor.path=/nowhere: no such folder')\n"
    )
    child = Child("train", script(tmp_path, body), tmp_path / "train.log", "launch")
    with pytest.raises(PhaseFailed) as exc:
        supervisor(tmp_path, mark).run(child)
    assert exc.value.phase == "launch"
    assert exc.value.cause.startswith("ValueError: actor.path=/nowhere: no such folder")
    assert "(exit 1; log: " in exc.value.cause
    assert marked(mark) == []


def test_before_its_first_event_a_child_is_in_its_first_phase(tmp_path, mark):
    child = Child(
        "resume", script(tmp_path, "time.sleep(600)\n"), tmp_path / "r.log", "resume"
    )
    with pytest.raises(PhaseFailed) as exc:
        supervisor(tmp_path, mark, resume=0.5).run(child)
    assert exc.value.phase == "resume"


def test_between_two_phases_the_gap_has_a_deadline_too(tmp_path, mark):
    body = "log.start('launch'); log.end('launch'); time.sleep(600)\n"
    sup = supervisor(tmp_path, mark)
    sup.between_s = 0.5
    child = Child("train", script(tmp_path, body), tmp_path / "t.log", "launch")
    with pytest.raises(PhaseFailed) as exc:
        sup.run(child)
    assert exc.value.phase == "after launch"


def test_a_finished_child_leaves_nothing_either(tmp_path, mark):
    pid_file = tmp_path / "daemon.pid"
    body = spawn_daemon(pid_file) + "log.start('launch'); log.end('launch')\n"
    child = Child("train", script(tmp_path, body), tmp_path / "t.log", "launch")
    supervisor(tmp_path, mark).run(child)
    assert not alive(int(pid_file.read_text()))
    assert marked(mark) == []


def test_the_mark_reaches_every_descendant_and_no_other_process(tmp_path, mark):
    env = {**os.environ, MARK_ENV: mark}
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], env=env
    )
    try:
        time.sleep(0.2)
        assert [p.pid for p in marked(mark)] == [proc.pid]
        assert marked(uuid.uuid4().hex) == []
    finally:
        proc.kill()
        proc.wait()


def test_the_cause_is_a_tracebacks_last_line_else_the_last_line(tmp_path):
    log = tmp_path / "x.log"
    log.write_text(
        "Traceback (most recent call last):\n  File x\n"
        "RuntimeError: the resume run found no recover checkpoint\nshutting down\n"
    )
    assert cause_in(log) == "RuntimeError: the resume run found no recover checkpoint"
    log.write_text("\x1b[37mall fine\x1b[0m\nlast words\n")
    assert cause_in(log) == "last words"


def test_a_phase_of_the_smoke_itself_has_its_deadline_too():
    from memagent_workflow.smoke.run import within

    with pytest.raises(PhaseFailed) as exc:
        within(0.2, "preflight", time.sleep, 30)
    assert (exc.value.phase, exc.value.cause) == (
        "preflight", "ran out of its deadline (0.2 s)"
    )  # fmt: skip
    with pytest.raises(ValueError, match="no such folder"):
        within(5, "model", lambda: (_ for _ in ()).throw(ValueError("no such folder")))
    assert within(5, "model", lambda x: x + 1, 1) == 2

"""Whatever stops the smoke, the report and smoke.json are written, and nothing
it started is left: a phase that raises anything (not only `PhaseFailed`), one
that runs out of its deadline (its thread's late result is dropped), SIGTERM and
SIGHUP (the Ctrl-C path), the smoke killed outright (its child dies with it),
and its Slurm jobs (cancelled by name). No launch runs here: the in-process
phases are replaced, the children are small scripts, Slurm's commands fakes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from examples import smoke as smoke_cli
from memagent_workflow.smoke import launch, slurm_jobs
from memagent_workflow.smoke.processes import PhaseFailed
from memagent_workflow.smoke.run import Smoke
from memagent_workflow.smoke.signals import Stopped, stop_on_signals
from standin import smoke as standin_smoke
from standin.build_cache import MARKER_FILE
from tests.unit.preflight_fakes import load

ROOT = Path(__file__).resolve().parents[2]


def smoke_of(tmp_path: Path, *flags: str) -> Smoke:
    overrides = [
        f"cluster.fileroot={tmp_path / 'areal'}",
        f"cluster.name_resolve.nfs_record_root={tmp_path / 'names'}",
    ]
    config = load("config_cpu.yaml", *overrides)
    args, _ = smoke_cli.parse(list(flags))
    entries = replace(standin_smoke.entries(), build_model=None)
    return Smoke(config, ["--config", "config_cpu.yaml"], args, entries, mark="m")


def report_of(smoke: Smoke) -> dict:
    return json.loads((smoke.dir / "smoke.json").read_text())


@pytest.fixture
def model_found(monkeypatch):
    monkeypatch.setattr(launch, "check_model", lambda path: f"{path}: a local model")


def test_any_exception_in_a_phase_writes_the_report_naming_it(
    tmp_path, monkeypatch, model_found, capsys
):
    def broken(self):
        raise OSError("disk quota exceeded")

    monkeypatch.setattr(Smoke, "preflight", broken)
    smoke = smoke_of(tmp_path)
    assert smoke.run() == 1
    failure = report_of(smoke)["failure"]
    assert failure == {"phase": "preflight", "cause": "OSError('disk quota exceeded')"}
    assert "smoke: FAILED in preflight" in capsys.readouterr().out


def test_a_phase_past_its_deadline_is_reported_and_its_late_result_dropped(
    tmp_path, monkeypatch, model_found
):
    release = threading.Event()
    real = Smoke.preflight

    def slow(self):
        release.wait(30)
        return real(self)

    monkeypatch.setattr(Smoke, "preflight", slow)
    smoke = smoke_of(tmp_path, "--deadline", "preflight=0.5")
    started = time.monotonic()
    assert smoke.run() == 1
    assert time.monotonic() - started < 20
    failure = report_of(smoke)["failure"]
    assert (
        failure["phase"] == "preflight"
        and "ran out of its deadline" in failure["cause"]
    )
    release.set()
    time.sleep(1.0)
    assert smoke.run_ is None  # the thread finished, its run never reached the smoke


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_take_the_ctrl_c_path(
    tmp_path, monkeypatch, model_found, sig
):
    def killed(self):
        os.kill(os.getpid(), sig)
        time.sleep(5)  # the handler raises in the main thread meanwhile

    monkeypatch.setattr(Smoke, "preflight", killed)
    smoke = smoke_of(tmp_path)
    before = signal.getsignal(sig)
    assert smoke.run() == 1
    assert report_of(smoke)["failure"] == {
        "phase": "interrupted",
        "cause": signal.Signals(sig).name,
    }
    assert signal.getsignal(sig) is before  # restored


def test_stop_on_signals_raises_a_keyboard_interrupt_naming_the_signal():
    with pytest.raises(KeyboardInterrupt) as caught, stop_on_signals():
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(5)
    assert isinstance(caught.value, Stopped) and str(caught.value) == "SIGHUP"


KILLED_SUPERVISOR = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    sys.path.insert(0, {root!r})
    from memagent_workflow.smoke.processes import Child, Supervisor
    out = Path({out!r})
    child = Child("train", [sys.executable, "-c", "import time; time.sleep(600)"],
                  out / "train.log", "launch")
    Supervisor(out / "events.jsonl", {{"launch": 600}}, "killed").run(child)
    """
)


def test_the_child_dies_with_a_smoke_killed_outright(tmp_path):
    code = KILLED_SUPERVISOR.format(root=str(ROOT), out=str(tmp_path))
    smoke = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 60
        children: list[psutil.Process] = []
        while not children and time.monotonic() < deadline:
            time.sleep(0.2)
            children = psutil.Process(smoke.pid).children()
        assert children, "the supervisor started no child"
        smoke.kill()  # SIGKILL: no handler runs, no cleanup
        smoke.wait()
        gone, alive = psutil.wait_procs(children, timeout=15)
        assert not alive, f"left running: {alive}"
    finally:
        if smoke.poll() is None:
            smoke.kill()


def fake_slurm(folder: Path, queue: list[str]) -> Path:
    """``squeue`` printing ``queue`` (job names), ``scancel`` logging its
    arguments, first on PATH."""
    folder.mkdir()
    log = folder / "scancel.log"
    (folder / "squeue").write_text(
        "#!/bin/sh\nprintf '%s\\n' " + " ".join(f"'{name}'" for name in queue) + "\n"
    )
    (folder / "scancel").write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    for name in ("squeue", "scancel"):
        (folder / name).chmod(0o755)
    return log


def test_the_smoke_trials_slurm_jobs_are_cancelled_by_name(tmp_path, monkeypatch):
    config = load("config_cpu.yaml", "scheduler.type=slurm")
    prefixes = slurm_jobs.smoke_job_prefixes(config)
    assert prefixes == ["memagent-cpu_trial0-smoke:", "memagent-cpu_trial0-smoke-eval:"]
    mine = ["memagent-cpu_trial0-smoke:actor", "memagent-cpu_trial0-smoke-eval:rollout"]
    others = ["memagent-cpu_trial0:actor", "memagent-cpu_trial0-smoke2:actor"]
    log = fake_slurm(tmp_path / "bin", [*mine, *others])
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert slurm_jobs.cancel_trial_jobs(prefixes) == sorted(mine)
    cancelled = [line.split("--name=")[1] for line in log.read_text().splitlines()]
    assert sorted(cancelled) == sorted(mine)


def test_no_slurm_jobs_are_looked_for_under_another_scheduler():
    assert slurm_jobs.smoke_job_prefixes(load("config_cpu.yaml")) == []


def test_the_cpu_twin_builds_a_missing_model_in_its_model_phase(
    tmp_path, monkeypatch, capsys
):
    """As the main job does (standin.cpu_job.build_model: its bar, its cached
    folder); the stand-in's warm start cut to 20 steps here, unchecked."""

    def stop_here(self):
        raise PhaseFailed("preflight", "stopped by the test")

    monkeypatch.setattr(Smoke, "preflight", stop_here)
    monkeypatch.setattr("standin.needle_model.check_format", lambda *_: None)
    model = tmp_path / "needle_model"
    config = load(
        "config_cpu.yaml",
        f"cluster.fileroot={tmp_path / 'areal'}",
        f"cluster.name_resolve.nfs_record_root={tmp_path / 'names'}",
        f"actor.path={model}",
        "standin.needle_warm_start_steps=20",
        "standin.needle_carry=false",  # no gate to learn in 20 steps
    )
    args, _ = smoke_cli.parse([])
    smoke = Smoke(
        config, ["--config", "config_cpu.yaml"], args, standin_smoke.entries(), "m"
    )
    assert smoke.run() == 1
    assert report_of(smoke)["failure"]["phase"] == "preflight"  # the model passed
    assert (model / "config.json").is_file() and (model / MARKER_FILE).is_file()
    assert "warm start" in capsys.readouterr().err  # the build's bar

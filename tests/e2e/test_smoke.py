"""The smoke as docs/smoke.md writes it: its CPU twin from a fresh clone
(``uv run python`` = this interpreter), a smoke whose model path does not
exist, and one whose engine cannot start.

The CPU twin runs the CPU main job's launch (AReaL's single controller, its
actor and rollout workers, the stand-in where SGLang would be) through every
phase: it exits 0, prints the phase table (the docs' sample lists the same
phases) and a projection of config_cpu.yaml's full run, writes smoke.json whose
rates are the ones its phases measured (and which the preflight reads to the
same projection), resumed through the recover checkpoint, evaluated the saved
checkpoint, left the real trial untouched and none of its processes running.
This run covers the single-controller launch of tests/e2e/test_train_launch.py
once more, at 2 + 1 steps: the price of checking the smoke's own path. Then the
main job the twin projects runs a few steps in the same clone, and the twin's
projected step must come within 25% of its measured one (issue 53): two timings,
so the file runs alone (``RUNS_ALONE``, tests/runs_alone.py) and both meet the
same machine. A last twin is sent SIGTERM during its model load and must stop as
on Ctrl-C: its report written, nothing of it left.
"""

from __future__ import annotations

import getpass
import json
import re
import shlex
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from bench.smoke_projection import TARGET, main_job_cmd, main_job_step
from memagent_workflow.preflight.actor_cost import MAX_FIXED_SHARE, fit_fixed
from memagent_workflow.smoke.events import read_events
from tests.e2e.launch_runs import ROOT, fresh_clone, worker_env

RUNS_ALONE = True  # compares two timings: no other test file runs meanwhile
DOC = ROOT / "docs" / "smoke.md"
CPU = "uv run python -m standin.smoke --config config_cpu.yaml$"
MISSING = "uv run python examples/smoke.py "
NO_ENGINE = "uv run python -m standin.smoke --config config_cpu.yaml sglang.model_path="
MARK_ENV = "MEMAGENT_TEST_MARK"  # every process the command starts inherits it
PHASES = {
    "model", "preflight", "launch", "model load", "engine start", "server bench",
    "first rollout", "logprob pass (step 2)", "actor step (step 2)",
    "weight update (step 2)", "save (step 2)", "recover checkpoint (step 2)",
    "resume", "resumed step", "eval",
}  # fmt: skip


def doc_line(prefix: str) -> str:
    """The docs' one command that starts with ``prefix`` (``$`` at its end: that
    is the whole command)."""
    whole = prefix.endswith("$")
    (line,) = [
        ln.strip()
        for block in re.findall(r"```bash\n(.*?)```", DOC.read_text(), re.S)
        for ln in block.splitlines()
        if (ln.strip() == prefix[:-1] if whole else ln.startswith(prefix))
    ]
    return line


@dataclass
class Done:
    proc: subprocess.CompletedProcess
    cwd: Path
    mark: str
    real_trial: list[str]  # what the real trial's folders held when it ended


def run_doc(line: str, cwd: Path, out: Path) -> Done:
    """The docs' command, as a user runs it in ``cwd``."""
    args = shlex.split(line)
    assert args[:3] == ["uv", "run", "python"], line
    mark = uuid.uuid4().hex
    env = {**worker_env(out), MARK_ENV: mark}
    proc = subprocess.run(
        [sys.executable, *args[3:]], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=1800,
    )  # fmt: skip
    return Done(proc, cwd, mark, [])


def left_running(mark: str) -> list[str]:
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get(MARK_ENV) == mark and p.status() != "zombie":
                found.append(" ".join(p.cmdline()))
        except psutil.Error:
            continue
    return found


@pytest.fixture(scope="module")
def smoke(needle_model_dir, tmp_path_factory) -> Done:
    clone = fresh_clone(tmp_path_factory.mktemp("smoke"), needle_model_dir)
    done = run_doc(doc_line(CPU), clone, clone)
    done.real_trial = [
        str(p) for p in (clone / "outputs").rglob("*") if "trial0" in p.parts
    ]
    return done


def logs(done: Done, trial: str = "trial0-smoke") -> Path:
    user = getpass.getuser()
    return done.cwd / "outputs/cpu/areal/logs" / user / "memagent-cpu" / trial


@pytest.fixture(scope="module")
def report(smoke) -> dict:
    assert smoke.proc.returncode == 0, (
        smoke.proc.stdout[-6000:] + smoke.proc.stderr[-3000:]
    )
    return json.loads((logs(smoke) / "smoke" / "smoke.json").read_text())


def printed_phases(stdout: str) -> list[str]:
    table = stdout.split("\nphase ", 1)[1].split("\n\n", 1)[0]
    return [row.split(" | ")[0].strip() for row in table.splitlines()[2:]]


def test_the_docs_cpu_smoke_prints_its_table_and_a_projection(smoke, report):
    out = smoke.proc.stdout
    assert "smoke: every phase passed" in out
    assert "projection of the full run, from these rates:" in out
    assert "run estimate: 40 steps (total_train_steps)" in out
    assert report["failure"] is None and report["projection"]["steps"] == 40


def test_no_phase_is_skipped(report):
    assert PHASES <= {row["phase"] for row in report["phases"]}


def test_the_docs_sample_lists_the_phases_it_prints(smoke):
    sample = re.search(r"```text\n(phase .*?)```", DOC.read_text(), re.S)[1]
    assert printed_phases("\n" + sample) == printed_phases(smoke.proc.stdout)


def test_every_rate_is_what_its_phases_measured(smoke, report):
    events = [
        json.loads(line)
        for line in (logs(smoke) / "smoke" / "events.jsonl").read_text().splitlines()
    ]

    def seconds(phase: str, n: int = 2) -> float:
        (e,) = [
            e for e in events
            if (e["run"], e["phase"], e["event"], e["n"]) == ("train", phase, "end", n)
        ]  # fmt: skip
        return e["seconds"]

    steps = [
        json.loads(s) for s in (logs(smoke) / "steps.jsonl").read_text().splitlines()
    ]
    step2 = next(s for s in steps if s["step"] == 2)
    tokens = step2["tokens"] - step2["tokens_skipped"]
    rates = report["rates"]
    # each logprob pass: a fixed part (fitted from step 2's logprob pass on its
    # rows once and 16 times over) and the per-token part the rate is
    fixed = fit_fixed(seconds("logprob pass"), seconds("logprob pass x16", 1), 16)
    assert rates["actor_fixed_s"] == pytest.approx(fixed)

    logp = seconds("logprob pass")
    logp_rate = tokens / (logp - min(fixed, MAX_FIXED_SHARE * logp))
    assert rates["actor_logp_tokens_per_s"] == pytest.approx(logp_rate)
    # an update token costs 3 forwards' worth (config_cpu.yaml: no LoRA, no
    # gradient checkpointing); the rest of the update's time is its fixed part
    assert rates["actor_train_tokens_per_s"] == pytest.approx(logp_rate / 3)
    update_fixed = max(0.0, seconds("actor step") - 3 * tokens / logp_rate)
    assert rates["actor_update_fixed_s"] == pytest.approx(update_fixed)
    assert rates["actor_row_tokens"] == pytest.approx(tokens / step2["rows"])
    # the slower of steps 1 and 2's (a disk update may wait a second for its entry)
    slower = max(seconds("weight update", 1), seconds("weight update", 2))
    assert rates["weight_update_s"] == pytest.approx(slower)
    (server,) = report["servers"]
    assert rates["decode_tokens_per_s"] == server["decode_tokens_per_s"] > 0
    assert rates["prefill_tokens_per_s"] == server["prefill_tokens_per_s"] > 0
    assert server["new_tokens"] == 3  # config_cpu.yaml's max_memory_tokens
    # decoded past the turn's 3 (bench.DECODE_MIN), EOS ignored, within max_tokens 64
    assert 3 < server["decode_tokens"] <= 64 - server["prompt_tokens"]


def test_the_preflight_projects_the_same_run_from_the_json(smoke, report):
    path = logs(smoke) / "smoke" / "smoke.json"
    cmd = [sys.executable, "-m", "standin.preflight", "--config", "config_cpu.yaml",
           "--measured", str(path)]  # fmt: skip
    proc = subprocess.run(
        cmd, cwd=smoke.cwd, env=worker_env(smoke.cwd), capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_line = next(
        ln
        for ln in report["projection"]["text"].splitlines()
        if ln.startswith("run estimate")
    )
    assert run_line in proc.stdout.splitlines()


def test_it_resumed_from_the_recover_checkpoint_and_evaluated_the_saved_one(smoke):
    events = (logs(smoke) / "smoke" / "events.jsonl").read_text()
    assert '"resumed_after_step": 2' in events
    steps = [
        json.loads(s)["step"]
        for s in (logs(smoke) / "steps.jsonl").read_text().splitlines()
    ]
    assert steps == [1, 2, 3]
    (checkpoint,) = (smoke.cwd / "outputs/cpu/areal/checkpoints").rglob("*globalstep1")
    assert "trial0-smoke" in checkpoint.parts  # step 2's HF checkpoint
    summary = json.loads((logs(smoke) / "smoke" / "eval" / "summary.json").read_text())
    assert Path(summary["meta"]["model"]) == checkpoint


def test_the_real_trial_is_untouched_and_nothing_is_left(smoke):
    assert smoke.real_trial == []  # no log, checkpoint or name-resolve entry
    assert logs(smoke).is_dir()
    assert left_running(smoke.mark) == []


@pytest.fixture(scope="module")
def main_job(smoke) -> tuple[float, list[float]]:
    """The CPU main job the twin projected, a few steps in the twin's clone right
    after it: its median step and every step's wall time (bench/smoke_projection.py)."""
    trial = "main-job-projection"
    proc = subprocess.run(
        [sys.executable, *main_job_cmd(trial)], cwd=smoke.cwd,
        env=worker_env(smoke.cwd), capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return main_job_step(trial, smoke.cwd)


def test_the_projection_is_within_25_percent_of_the_main_jobs_step(report, main_job):
    measured, walls = main_job
    projected = report["projection"]["step_s"]
    assert abs(projected / measured - 1) <= TARGET, (projected, measured, walls)


def test_a_missing_model_stops_the_smoke_at_the_model_phase(tmp_path):
    done = run_doc(doc_line(MISSING), ROOT, tmp_path)
    out = done.proc.stdout
    assert done.proc.returncode == 1, out[-3000:] + done.proc.stderr[-3000:]
    row = "model | FAILED | actor.path=/nonexistent/model: no such folder"
    assert row in out and "smoke: FAILED in model" in out
    sample = re.search(r"```text\n(phase \| run .*?)```", DOC.read_text(), re.S)[1]
    assert sample.splitlines()[-1] in out
    assert left_running(done.mark) == []


def test_an_engine_that_cannot_start_stops_the_smoke_at_engine_start(
    needle_model_dir, tmp_path_factory
):
    clone = fresh_clone(tmp_path_factory.mktemp("no_engine"), needle_model_dir)
    line = doc_line(NO_ENGINE)
    empty = Path(line.rsplit("=", 1)[1])
    empty.mkdir(parents=True, exist_ok=True)  # the docs' `mkdir -p`
    done = run_doc(line, clone, clone)
    out = done.proc.stdout
    assert done.proc.returncode == 1, out[-3000:] + done.proc.stderr[-3000:]
    assert "engine start | FAILED | RuntimeError: the stand-in server exited" in out
    assert out.rstrip().splitlines()[-1].startswith("smoke: FAILED in engine start")
    train_log = (logs(done) / "smoke" / "train.log").read_text()
    assert f"--model-path {empty}: no config.json there" in train_log
    assert left_running(done.mark) == []


def test_sigterm_stops_the_smoke_as_ctrl_c_does_and_leaves_nothing(
    needle_model_dir, tmp_path_factory
):
    clone = fresh_clone(tmp_path_factory.mktemp("sigterm"), needle_model_dir)
    args = shlex.split(doc_line(CPU))
    mark = uuid.uuid4().hex
    done = Done(None, clone, mark, [])
    events = logs(done) / "smoke" / "events.jsonl"
    with open(clone / "smoke.out", "w") as out:
        proc = subprocess.Popen(
            [sys.executable, *args[3:]], cwd=clone, stdout=out,
            stderr=subprocess.STDOUT, env={**worker_env(clone), MARK_ENV: mark},
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline and proc.poll() is None:
            if any(e.phase == "model load" for e in read_events(events)):
                break
            time.sleep(1.0)
        assert proc.poll() is None, (clone / "smoke.out").read_text()[-3000:]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=300) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
    data = json.loads((logs(done) / "smoke" / "smoke.json").read_text())
    assert data["failure"] == {"phase": "interrupted", "cause": "SIGTERM"}
    assert "smoke: FAILED in interrupted" in (clone / "smoke.out").read_text()
    assert left_running(mark) == []

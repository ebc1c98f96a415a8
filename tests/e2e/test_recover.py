"""The CPU training job (one-process SPMD) killed once and resumed, under engine faults.

One stand-in server, owned by the test, fails ~10% of /generate calls (500s,
connections cut mid-response, answers later than the client's timeout) for the
whole run. The same command is run twice over one epoch:

1. SIGKILLed, once it has trained a step, at a point drawn at random among
   ``before`` (a /generate of the next step's rollout), ``during`` (the
   server's /pause_generation of a weight update: the server is left paused)
   and ``after`` (its /continue_generation). The draw is seeded from the clock
   and printed, so repeated CI runs cover all three; ``RECOVER_KILL_AT`` or
   ``RECOVER_SEED`` replays one.
2. Run to the end.

The second run must resume at the step after the last recover checkpoint, with
the optimizer, LR schedule and data position restored, the server serving the
checkpoint's weights before any new rollout, and the epoch must train every
question exactly once. The server's weight digests come from its event log
(``standin.faults``), a stand-in-only probe. A server gone for good (the
trainer stops with the resume advice) costs a third trainer start-up and is
covered by ``tests/unit/test_ledger.py`` instead.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from standin.launch import StandinServer

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS, BATCH, LR = 16, 2, 1e-3
# Half an epoch: AReaL reads ahead, so at a pass's end the last batch may hold a
# question of the next pass; inside one pass "exactly once" is exact.
STEPS = QUESTIONS // BATCH // 2
FAULTS = "error=0.04,reset=0.03,delay=0.03,delay_s=4,seed=7"
KILL_POINTS = ("before", "during", "after")


class Events:
    """The stand-in's event log, read incrementally."""

    def __init__(self, path: Path):
        self.path, self.offset, self.all = path, 0, []

    def poll(self) -> list[dict]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        new = [json.loads(line) for line in data[:end].splitlines()]
        self.all += new
        return new


def read_jsonl(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            out.append(json.loads(line))
        except ValueError:  # a line cut by the kill
            pass
    return out


class Chain:
    """One training command, run again and again against one server."""

    def __init__(self, out: Path, model: Path):
        self.out, self.model = out, model
        self.events = Events(out / "events.jsonl")
        self.server: StandinServer | None = None
        self.port: int | None = None
        self.runs: list[dict] = []

    def start_server(self) -> None:
        self.server = StandinServer(
            self.model, port=self.port, log_file=self.out / "server.log",
            extra_args=["--faults", FAULTS, "--event-log", str(self.events.path)],
        ).start()  # fmt: skip
        self.port = self.server.port

    def command(self) -> list[str]:
        o = self.out
        return [
            sys.executable, "examples/train.py", "--config", "config_cpu.yaml",
            f"total_train_steps={STEPS}", f"train_dataset.batch_size={BATCH}",
            f"standin.synthetic_train={QUESTIONS}", "standin.synthetic_valid=2",
            "standin.synthetic_docs=2", "valid_dataset.batch_size=2",
            "memagent.group_size=2", "memagent.chunk_tokens=64",
            "memagent.max_memory_tokens=8", "memagent.max_final_tokens=8",
            "gconfig.max_new_tokens=8", "eval_gconfig.max_new_tokens=8",
            "scheduler.type=null",  # one-process SPMD: the test owns the server
            "rollout.max_concurrent_rollouts=2", "rollout.request_timeout=3",
            "memagent.engine_retry_s=5",
            f"actor.optimizer.lr={LR}", "actor.optimizer.warmup_steps_proportion=1.0",
            f"actor.path={self.model}", f"cluster.fileroot={o / 'areal'}",
            f"cluster.name_resolve.nfs_record_root={o / 'name_resolve'}",
            f"train_dataset.path={o / 'train.jsonl'}",
            f"valid_dataset.path={o / 'valid.jsonl'}",
            f"standin.server_addr=127.0.0.1:{self.port}",
        ]  # fmt: skip

    def log_file(self, name: str) -> Path:
        return next((self.out / "areal" / "logs").rglob(name), self.out / "none")

    def steps_done(self) -> int:
        return len(read_jsonl(self.log_file("steps.jsonl")))

    def run(self, stop: str) -> dict:
        """Start the command; ``stop`` it once it has trained a step (module doc)."""
        log = self.out / f"run{len(self.runs) + 1}.log"
        self.events.poll()
        run = {"stop": stop, "log": log, "start": time.time()}
        run["first_line"] = len(read_jsonl(self.log_file("steps.jsonl")))
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        with log.open("wb") as f:
            proc = subprocess.Popen(
                self.command(), cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT
            )
        trigger, deadline = None, time.monotonic() + 600
        while proc.poll() is None:
            assert time.monotonic() < deadline, f"run hung: {log.read_text()[-3000:]}"
            self.events.poll()
            if trigger is None and self.steps_done() > run["first_line"]:
                trigger = len(self.events.all)  # a step trained: arm the stop
            if (
                trigger is not None
                and stop != "none"
                and self._fire(stop, proc, trigger)
            ):
                break
            time.sleep(0.02)
        run["rc"] = proc.wait(timeout=300)
        run["exited"] = time.time()
        run["lines"] = read_jsonl(self.log_file("steps.jsonl"))[run["first_line"] :]
        self.runs.append(run)
        return run

    def _fire(self, stop: str, proc: subprocess.Popen, since: int) -> bool:
        want = {"during": "/pause_generation", "after": "/continue_generation"}
        path = want.get(stop, "/generate")  # before: the next step's rollout
        if any(e["path"] == path for e in self.events.all[since:]):
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return True
        return False


def draw_kill_point() -> tuple[str, int]:
    """Where to kill the first run, and the seed it was drawn with."""
    seed = int(os.environ.get("RECOVER_SEED", time.time_ns() % 2**32))
    stop = os.environ.get("RECOVER_KILL_AT") or random.Random(seed).choice(KILL_POINTS)
    assert stop in KILL_POINTS, f"RECOVER_KILL_AT={stop}: one of {KILL_POINTS}"
    return stop, seed


@pytest.fixture(scope="module")
def chain(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("recover")
    model = out / "model"
    shutil.copytree(tiny_model_dir, model)
    chain = Chain(out, model)
    chain.kill_at, chain.seed = draw_kill_point()
    print(f"\nkill point: {chain.kill_at} (RECOVER_SEED={chain.seed})", flush=True)
    chain.start_server()
    try:
        chain.run(chain.kill_at)
        if chain.runs[-1]["rc"] != 0:  # killed: resume to the end
            chain.run("none")
    finally:
        chain.server.stop()
    chain.events.poll()
    runs = [{**r, "log": str(r["log"])} for r in chain.runs]
    record = {"kill_at": chain.kill_at, "seed": chain.seed, "runs": runs}
    (out / "chain.json").write_text(json.dumps(record))  # for post-mortems
    return chain


@pytest.fixture(autouse=True)
def _name_the_kill_point(chain, record_property):
    # In the junit record and the failure report of every test of the chain.
    record_property("kill_at", chain.kill_at)
    record_property("recover_seed", chain.seed)


def resumed_from(log: Path) -> int | None:
    text = log.read_text()
    m = re.search(r"resumed from the recover checkpoint of global step (\d+)", text)
    return int(m.group(1)) if m else None


def fingerprints(log: Path, kind: str) -> list[dict]:
    pat = rf"recover checkpoint {kind}: (\{{.*?\}})"
    return [json.loads(m) for m in re.findall(pat, log.read_text())]


def test_the_kill_point_was_hit_and_the_resumed_run_finished(chain):
    where = f"kill point {chain.kill_at}, RECOVER_SEED={chain.seed}"
    assert [r["stop"] for r in chain.runs] == [chain.kill_at, "none"], where
    assert chain.runs[0]["rc"] == -signal.SIGKILL, where
    assert chain.runs[1]["rc"] == 0, f"{where}: {chain.runs[1]['log']}"


def test_each_run_resumes_at_the_step_after_its_checkpoint(chain):
    for before, run in zip(chain.runs, chain.runs[1:], strict=False):
        step = resumed_from(run["log"])
        assert step is not None, run["log"].read_text()[-2000:]
        # A step is checkpointed before it is logged, so no logged step is lost
        # and at most one unlogged one was kept.
        last_logged = before["lines"][-1]["step"] - 1  # 0-based global step
        assert last_logged <= step <= last_logged + 1
        assert run["lines"][0]["step"] - 1 == step + 1  # trains the next one
    lines = [s for r in chain.runs for s in r["lines"]]
    assert lines[-1]["step"] == STEPS


def test_optimizer_and_schedule_come_back_as_saved(chain):
    for i, run in enumerate(chain.runs[1:], start=1):
        (restored,) = fingerprints(run["log"], "restored")
        saved = [f for r in chain.runs[:i] for f in fingerprints(r["log"], "saved")]
        assert restored in saved
        assert restored["scheduler_step"] == resumed_from(run["log"]) + 1
    # The LR of every step follows one linear warm-up (over the run's steps or the
    # epoch's, as AReaL sizes it), never restarting after a resume.
    lines = [s for r in chain.runs for s in r["lines"]]
    first = next(s for s in lines if s["lr"] > 0)
    warmup = round(LR * (first["step"] - 1) / first["lr"])
    assert warmup in (STEPS, QUESTIONS // BATCH)
    for s in lines:
        assert s["lr"] == pytest.approx(LR * (s["step"] - 1) / warmup, rel=1e-6)


def test_no_question_is_trained_twice_or_skipped(chain):
    batches = {}
    for line in read_jsonl(chain.log_file("questions.jsonl")):
        batches[line["step"]] = line["questions"]  # a redone step: the last wins
    assert sorted(batches) == list(range(STEPS))
    trained = [q for qs in batches.values() for q in qs]
    assert len(trained) == len(set(trained)) == STEPS * BATCH


def test_the_server_gets_the_checkpoint_weights_before_any_new_rollout(chain):
    events = chain.events.all
    updates = [e for e in events if e["path"] == "/update_weights_from_disk"]
    for run in chain.runs[1:]:
        version = f"weight_update_v{resumed_from(run['log']) + 1}"
        mine = [e for e in events if e["t"] >= run["start"]]
        first_rollout = min(e["t"] for e in mine if e["path"] == "/generate")
        restored = next(e for e in mine if e["path"] == "/update_weights_from_disk")
        assert restored["model_path"].endswith(version)
        assert restored["t_done"] <= first_rollout
        # ... and they are the weights the crashed run served after that step
        pushed = [
            e for e in updates
            if e["t"] < run["start"] and e["model_path"].endswith(version)
        ]  # fmt: skip
        assert pushed and pushed[-1]["digest"] == restored["digest"]


def test_faults_hit_the_run_and_no_nan_reached_the_loss(chain):
    kinds = {e["fault"] for e in chain.events.all if e["path"] == "/generate"}
    assert {"error", "reset", "delay"} <= kinds
    for s in (s for r in chain.runs for s in r["lines"]):
        assert math.isfinite(s["actor_loss"]) and math.isfinite(s["grad_norm"])
        for key in ("groups_rejected", "episodes_failed", "calls_retried"):
            assert isinstance(s[key], int) and s[key] >= 0

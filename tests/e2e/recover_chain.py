"""One CPU training command run again and again, killed at chosen points (e2e tests).

A `Chain` runs ``python -m standin.train --config config_cpu.yaml`` over one small
epoch in one of two launch modes: ``spmd`` (``scheduler.type=null``: one
process, against a SGLang stand-in server the chain owns, with injected
faults) or ``local`` (AReaL's single controller: its workers, and the stand-in
its rollout worker launches, on vLLM: ``rollout.backend=vllm:d1``, so that
recovery is run through both engines' clients). Each `Chain.run` starts the
command and, by its ``stop``:

* ``before`` / ``during`` / ``after``: once the run has trained a step, SIGKILLs
  the whole run (every process it started) when the server next sees a
  generation (the next step's rollout: SGLang's ``/generate``, vLLM's
  ``/v1/completions``), a pause (a weight update under way) or a continue (one
  just done);
* ``server`` (spmd): SIGKILLs only the stand-in, for good, once the run has
  started rolling out; the run must stop by itself;
* ``none``: lets it finish.

The server's event log (``standin.faults``, a stand-in-only probe) says what it
saw and when, with the digest of the weights it served after each update.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from bench.learning import NO_LENGTH_EVAL
from memagent_workflow.infra.terminal import CONSOLE_LOG
from standin.launch import EXTRA_ARGS_ENV, StandinServer

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS, BATCH, LR = 8, 2, 1e-3
STEPS = QUESTIONS // BATCH  # one whole epoch
FAULTS = "error=0.04,reset=0.03,delay=0.03,delay_s=4,seed=7"
KILL_POINTS = ("before", "during", "after")
CHAIN_ENV = "RECOVER_CHAIN"  # marks every process of a chain (orphan check)
ENGINE_RETRY_S, REQUEST_TIMEOUT_S = 5, 3
ENGINE = {"spmd": "sglang", "local": "vllm"}  # each chain's rollout.backend


@dataclass(frozen=True)
class Routes:
    """The server routes an engine's AReaL client calls (the stand-in's event
    log names them)."""

    generate: str
    disk_update: str
    pause: str
    resume: str


ROUTES = {
    "sglang": Routes(
        "/generate", "/update_weights_from_disk", "/pause_generation",
        "/continue_generation",
    ),
    "vllm": Routes(
        "/v1/completions", "/areal_update_weights", "/areal_pause_generation",
        "/areal_continue_generation",
    ),
}  # fmt: skip


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


def chain_processes(marker: str) -> list[psutil.Process]:
    """Live processes started by the chain marked ``marker`` (any parent)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(CHAIN_ENV) == marker and proc.status() not in (
                psutil.STATUS_ZOMBIE,
                psutil.STATUS_DEAD,
            ):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return found


class Chain:
    """One training command, run again and again (module doc)."""

    def __init__(self, out: Path, model: Path, mode: str, seed: int):
        self.out, self.model, self.mode, self.seed = out, model, mode, seed
        self.events = Events(out / "events.jsonl")
        self.routes = ROUTES[ENGINE[mode]]
        self.server: StandinServer | None = None
        self.runs: list[dict] = []

    def start_server(self) -> None:
        """spmd: the chain's own stand-in, failing ~10% of /generate calls."""
        self.stop_server()
        self.server = StandinServer(
            self.model, log_file=self.out / "server.log",
            extra_args=["--faults", FAULTS, "--event-log", str(self.events.path)],
        ).start()  # fmt: skip

    def command(self) -> list[str]:
        o = self.out
        cmd = [
            sys.executable, "-m", "standin.train", "--config", "config_cpu.yaml",
            f"seed={self.seed}",  # AReaL draws ports from it: distinct per chain
            f"total_train_steps={STEPS}", f"train_dataset.batch_size={BATCH}",
            f"standin.synthetic_train={QUESTIONS}", NO_LENGTH_EVAL,
            "memagent.group_size=2",
            "warmup_steps=null",  # the LR warm-up spans the run (below)
            "rollout.max_concurrent_rollouts=2",
            f"rollout.request_timeout={REQUEST_TIMEOUT_S}",
            f"memagent.engine_retry_s={ENGINE_RETRY_S}",
            f"actor.optimizer.lr={LR}", "actor.optimizer.warmup_steps_proportion=1.0",
            f"actor.path={self.model}", f"cluster.fileroot={o / 'areal'}",
            f"cluster.name_resolve.nfs_record_root={o / 'name_resolve'}",
            f"train_dataset.path={o / 'train.jsonl'}",
            f"valid_dataset.path={o / 'valid.jsonl'}",
            f"scheduler.type={'null' if self.mode == 'spmd' else 'local'}",
            f"rollout.backend={ENGINE[self.mode]}:d1",
        ]  # fmt: skip
        if self.mode == "spmd":  # validation once at the end, on 2 questions
            assert self.server is not None
            return cmd + [
                "standin.synthetic_valid=2", "valid_dataset.batch_size=2",
                f"standin.server_addr={self.server.addr}",
            ]  # fmt: skip
        return cmd + ["valid_dataset=null"]  # no eval-rollout worker

    def env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "OMP_NUM_THREADS": "1",
            CHAIN_ENV: str(self.out),
        }
        if self.mode == "local":  # the stand-in the rollout worker launches
            env[EXTRA_ARGS_ENV] = f"--event-log {self.events.path}"
        return env

    def log_file(self, name: str) -> Path:
        return next((self.out / "areal" / "logs").rglob(name), self.out / "none")

    def steps_done(self) -> int:
        return len(read_jsonl(self.log_file("steps.jsonl")))

    def run(self, stop: str, timeout: float = 600) -> dict:
        """Start the command; ``stop`` it as the module doc says."""
        log = self.out / f"run{len(self.runs) + 1}.log"
        console = self.log_file(CONSOLE_LOG)
        console_at = console.stat().st_size if console.is_file() else 0
        self.events.poll()
        run = {"stop": stop, "log": log, "start": time.time(), "events": 0}
        run["events"] = len(self.events.all)
        run["first_line"] = self.steps_done()
        with log.open("wb") as f:
            proc = subprocess.Popen(
                self.command(), cwd=ROOT, env=self.env(), stdout=f,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        trigger, deadline = None, time.monotonic() + timeout
        while proc.poll() is None:
            if time.monotonic() > deadline:
                self.kill_run(proc)
                raise AssertionError(f"run hung: {log.read_text()[-3000:]}")
            self.events.poll()
            if stop == "server":
                if self._kill_server_at_first_rollout(run):
                    stop = "waiting"  # for the run to stop by itself
            elif trigger is None and self.steps_done() > run["first_line"]:
                trigger = len(self.events.all)  # a step trained: arm the kill
            elif trigger is not None and stop in KILL_POINTS:
                if self._fire(stop, trigger):
                    run["survivors"] = self.kill_run(proc)
                    break
            time.sleep(0.02)
        run["rc"] = proc.wait(timeout=300)
        run["exited"] = time.time()
        # The run's log: what its terminal showed, after everything the quiet
        # terminal kept from it (console.log, shared by the trial's runs).
        full = self.out / f"run{len(self.runs) + 1}.full.log"
        kept = b""
        if self.log_file(CONSOLE_LOG).is_file():
            with self.log_file(CONSOLE_LOG).open("rb") as f:
                f.seek(console_at)
                kept = f.read()
        full.write_bytes(kept + b"\n" + log.read_bytes())
        run["log"] = full
        run["lines"] = read_jsonl(self.log_file("steps.jsonl"))[run["first_line"] :]
        run.setdefault("survivors", self.survivors(timeout=30))
        self.runs.append(run)
        return run

    def _fire(self, stop: str, since: int) -> bool:
        want = {"during": self.routes.pause, "after": self.routes.resume}
        path = want.get(stop, self.routes.generate)  # before: next step's rollout
        return any(e["path"] == path for e in self.events.all[since:])

    def _kill_server_at_first_rollout(self, run: dict) -> bool:
        """SIGKILL the chain's stand-in once the run has started rolling out."""
        mine = self.events.all[run["events"] :]  # (t: when a request came in)
        generate = self.routes.generate
        if not any(e["path"] == generate and e["t"] >= run["start"] for e in mine):
            return False
        assert self.server is not None and self.server.proc is not None
        self.server.proc.kill()
        run["server_killed"], run["server_addr"] = time.time(), self.server.addr
        return True

    def kill_run(self, proc: subprocess.Popen) -> list[str]:
        """SIGKILL every process of the run, as a crashed node would lose them;
        return any of the chain's processes still alive after."""
        root = psutil.Process(proc.pid)
        procs = [root, *root.children(recursive=True)]
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the run's session, then strays
        except ProcessLookupError:
            pass
        for p in procs:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        proc.wait()  # reaped here, not by psutil: Popen keeps its return code
        psutil.wait_procs(procs[1:], timeout=30)
        return self.survivors(timeout=0)

    def survivors(self, timeout: float) -> list[str]:
        """The chain's processes still alive (after up to ``timeout`` s)."""
        deadline = time.monotonic() + timeout
        while True:
            alive = chain_processes(str(self.out))
            if not alive or time.monotonic() >= deadline:
                return [" ".join(p.cmdline())[:200] for p in alive]
            time.sleep(0.5)

    def server_alive(self) -> bool:
        return self.server is not None and self.server.proc.poll() is None

    def stop_server(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

"""Run the entry scripts as a user does, under AReaL's schedulers, for e2e tests.

Every run is ``python -m standin.train --config config_cpu.yaml`` (or
``standin.eval``: ``examples/train.py`` and ``eval.py`` with the stand-in's
classes passed in) with the same overrides a GPU user changes (scheduler, weight sync, sizes), in a
subprocess. Training runs go as docs/gpu-launch.md writes them: from the root of a
fresh copy of the repository's tracked files (`fresh_clone`), with the
config's relative paths (``outputs/cpu/...``) as they are. AReaL's rollout
worker launches the stand-in and stops it at the end; the stand-in leaves an
exit report (stand-in only: its served weights' digest and the weight updates
it received) in ``reports/``, and logs every POST it answers in
``events.jsonl`` (``--event-log``: which routes, hence which protocol, a run
used).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM

from bench.learning import NO_LENGTH_EVAL
from standin.launch import EXTRA_ARGS_ENV, REPORT_DIR_ENV
from standin.model import weights_digest

ROOT = Path(__file__).resolve().parents[2]
EVENTS = "events.jsonl"  # the stand-in's event log, in a run's folder

# The launches the tests run: docs/gpu-launch.md's GPU commands with the GPU config's
# weight sync (xccl, bf16) or config_cpu.yaml's (disk). docs/gpu-launch.md lists them.
LAUNCHES = {
    "local_disk": ("scheduler.type=local",),
    "spmd_disk": ("scheduler.type=null",),  # tests/e2e/test_train_cpu.py
}
# The README's override for vLLM (AReaL's RemotevLLMEngine, the stand-in in its
# vLLM mode): on the main job as the README writes it (the single controller,
# disk), and under Ray with config.yaml's weight sync (xccl in bf16), as a GPU
# cluster runs. AReaL's controllers drive xccl alike under both schedulers and
# for both engines; SGLang's xccl client is run against the stand-in in
# tests/integration/test_standin_xccl.py.
VLLM = "rollout.backend=vllm:d1"
LAUNCHES |= {
    "vllm": (VLLM,),
    "vllm_ray_xccl": (  # on two Ray nodes of this machine (docs/multi-node.md)
        "scheduler.type=ray",
        "cluster.n_nodes=2",
        "actor.weight_update_mode=xccl",
        "actor.dtype=bfloat16",
        VLLM,
    ),
}
EVAL_LAUNCH = ("scheduler.type=local",)

# 2 GRPO steps of 2 questions x 2 episodes x 2 turns; step 2 waits for v1;
# validation after step 2. Weight decay makes every step change every weight,
# so the weights a server serves tell one version from another even when every
# group of so small a run ties (advantage 0, no gradient).
SMALL_TRAINING = (
    "total_train_steps=2",
    "evaluator.freq_steps=2",
    "rollout.max_head_offpolicyness=0",
    "train_dataset.batch_size=2",
    "memagent.group_size=2",
    "memagent.max_chunks=2",
    "standin.synthetic_train=4",
    "standin.synthetic_valid=2",
    "actor.optimizer.weight_decay=0.01",
    NO_LENGTH_EVAL,
)


def digest_of(path: Path) -> str:
    """The stand-in's digest of an HF checkpoint, loaded as the server loads it."""
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    return weights_digest(model)


def worker_env(out: Path) -> dict[str, str]:
    # Workers and the stand-in inherit this environment (LocalScheduler passes
    # it on; Ray's workers get it from the Ray instance the job starts). No
    # PYTHONPATH: the project's environment makes it importable, as for users.
    env = {**os.environ, REPORT_DIR_ENV: str(out / "reports"), "OMP_NUM_THREADS": "1"}
    env.setdefault(EXTRA_ARGS_ENV, f"--event-log {out / EVENTS}")
    env.pop("PYTHONPATH", None)
    return env


def fresh_clone(dest: Path, model: Path | None = None) -> Path:
    """The repository's tracked files copied to ``dest``: what a clone holds.

    ``model``: a needle model built already, placed where ``config_cpu.yaml``
    builds it (``outputs/cpu/needle_model``), as after a first run: the build
    would only repeat the fixture's (same key, same bytes).
    """
    tracked = (
        subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, tracked):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    if model is not None:
        shutil.copytree(model, dest / "outputs" / "cpu" / "needle_model")
    return dest


@dataclass
class Run:
    """One finished entry-script run and what it left behind."""

    out: Path
    log: str
    seconds: float
    reports: list[dict] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)  # the Ray nodes it ran on

    @property
    def steps(self) -> list[dict]:
        text = next(self.out.rglob("steps.jsonl")).read_text()
        return [json.loads(line) for line in text.splitlines()]

    @property
    def routes(self) -> Counter[str]:
        """The POST requests the run's stand-in answered, by route."""
        lines = (self.out / EVENTS).read_text().splitlines()
        return Counter(json.loads(line)["path"] for line in lines)

    @property
    def checkpoint(self) -> Path:
        return next(self.out.rglob("checkpoints/**/config.json")).parent


class Launched:
    """An entry script started in the background; `finish` waits for it."""

    def __init__(
        self,
        cmd: list[str],
        out: Path,
        cwd: Path = ROOT,
        env: dict[str, str] | None = None,
    ):
        self.cmd, self.out = cmd, out
        out.mkdir(parents=True, exist_ok=True)
        self.log_path = out / "run.log"
        self._log = self.log_path.open("w")
        self.start = time.monotonic()
        self.proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env={**worker_env(out), **(env or {})},
            stdout=self._log,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def finish(self, timeout: float = 1500) -> Run:
        """Wait; fail with the end of the log unless the script exited 0."""
        try:
            self.proc.wait(timeout=max(1.0, self.start + timeout - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        finally:
            self._log.close()
        seconds = time.monotonic() - self.start
        log = self.log_path.read_text(errors="replace")
        assert self.proc.returncode == 0, f"{' '.join(self.cmd)}\n...\n{log[-6000:]}"
        reports = sorted((self.out / "reports").glob("*.json"))
        found = [json.loads(p.read_text()) for p in reports]
        return Run(self.out, log, seconds, reports=found)


def train_cmd(*overrides: str) -> list[str]:
    """docs/gpu-launch.md's CPU command (``uv run python`` = this interpreter) with
    ``overrides``, shortened; run from the root of a `fresh_clone`."""
    return [
        sys.executable, "-m", "standin.train", "--config", "config_cpu.yaml",
        *overrides, *SMALL_TRAINING,
    ]  # fmt: skip


def run_one_process(
    entry: list[str], out: Path, model: Path, server_addr: str, *overrides: str
) -> subprocess.CompletedProcess:
    """Two steps of config_cpu.yaml in the one-process SPMD mode against a
    stand-in the test owns (``server_addr``), its files and data under ``out``.

    ``entry``: the interpreter's arguments before ``--config`` (``-m
    standin.train`` or another module and its flags); ``overrides`` come after the
    run's sizes. Fails with the end of its output unless the run exits 0.
    """
    cmd = [
        sys.executable, *entry, "--config", "config_cpu.yaml",
        "scheduler.type=null",  # the one-process SPMD mode
        "total_train_steps=2", "rollout.max_head_offpolicyness=0",
        NO_LENGTH_EVAL, *overrides,
        f"actor.path={model}", f"cluster.fileroot={out / 'areal'}",
        f"cluster.name_resolve.nfs_record_root={out / 'name_resolve'}",
        f"train_dataset.path={out / 'train.jsonl'}",
        f"valid_dataset.path={out / 'valid.jsonl'}",
        f"standin.server_addr={server_addr}",
    ]  # fmt: skip
    proc = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=900,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc

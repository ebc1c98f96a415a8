"""The CPU training job killed and resumed, in both launch modes, over a whole epoch.

Two chains of the same command run at the same time (``recover_chain``):

* ``spmd`` (one process): its stand-in, owned by the test, fails ~10% of
  /generate calls (500s, connections cut mid-response, answers later than the
  client's timeout). Run 1 is SIGKILLed once it has trained a step; run 2
  resumes, and its stand-in is killed for good once it rolls out: the run
  must stop by itself with a clear error within `STOP_BOUND_S`; run 3, the
  same command with a live server again, resumes and finishes the epoch.
* ``local`` (AReaL's single controller, the CPU main job's mode, on vLLM:
  ``rollout.backend=vllm:d1``): run 1 is SIGKILLed with every process it
  started (controller, workers, the stand-in the rollout worker launched);
  run 2 resumes and finishes the epoch.

The kill point (``before``, ``during`` or ``after`` a weight update, see
``recover_chain``) is drawn per chain from a seed taken from the clock and
printed, so repeated CI runs cover all three; ``RECOVER_KILL_AT`` or
``RECOVER_SEED`` replays one.

Each resumed run must start at the step after the last recover checkpoint,
with the optimizer, LR schedule and data position restored, and the server
must serve the checkpoint's weights before any new rollout; over the epoch
every question is trained exactly once (the ledger's pass accounting).
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.e2e.recover_chain import (
    BATCH,
    ENGINE_RETRY_S,
    KILL_POINTS,
    LR,
    QUESTIONS,
    STEPS,
    Chain,
    read_jsonl,
)

MODES = ("spmd", "local")
PLANS = {"spmd": ("server", "none"), "local": ("none",)}  # after the kill
SEEDS = {"spmd": 301, "local": 302}
# A server gone for good: every model call fails, AReaL's client trying each
# `request_retries` (3) times 1 s apart and the workflow for ENGINE_RETRY_S, so
# every group is rejected after about ENGINE_RETRY_S + 4 s; the ledger stops
# the run once a step has pulled a batch more than AReaL can hold in flight,
# (2 * (1 + 1) + 1) * BATCH = 10 questions, in waves of two groups
# (rollout.max_concurrent_rollouts): 5 waves, about 45 s (49 s measured on a
# loaded machine); three times that for a shared, loaded 2-core machine.
STOP_BOUND_S = 3 * 5 * (ENGINE_RETRY_S + 4)


def draw_kill_points() -> tuple[dict[str, str], int]:
    """Where to kill each chain's first run, and the seed they were drawn with."""
    seed = int(os.environ.get("RECOVER_SEED", time.time_ns() % 2**32))
    rng = random.Random(seed)
    points = {mode: rng.choice(KILL_POINTS) for mode in MODES}
    if os.environ.get("RECOVER_KILL_AT"):
        points = dict.fromkeys(MODES, os.environ["RECOVER_KILL_AT"])
    for stop in points.values():
        assert stop in KILL_POINTS, f"RECOVER_KILL_AT={stop}: one of {KILL_POINTS}"
    return points, seed


def play(chain: Chain) -> Chain:
    try:
        for stop in (chain.kill_at, *PLANS[chain.mode]):
            if chain.runs and chain.runs[-1]["rc"] == 0:  # finished early
                break
            if chain.mode == "spmd" and not chain.server_alive():
                chain.start_server()  # (again, after a server gone for good)
            chain.run(stop)
    finally:
        chain.stop_server()
    chain.events.poll()
    runs = [{**r, "log": str(r["log"])} for r in chain.runs]
    record = {"kill_at": chain.kill_at, "recover_seed": chain.recover_seed}
    record["runs"] = runs
    (chain.out / "chain.json").write_text(json.dumps(record))  # post-mortems
    return chain


@pytest.fixture(scope="module")
def chains(needle_model_dir, tmp_path_factory):
    points, seed = draw_kill_points()
    print(f"\nkill points: {points} (RECOVER_SEED={seed})", flush=True)
    chains = {}
    for mode in MODES:
        out = tmp_path_factory.mktemp(f"recover_{mode}")
        shutil.copytree(needle_model_dir, out / "model")
        chains[mode] = Chain(out, out / "model", mode, SEEDS[mode])
        chains[mode].kill_at, chains[mode].recover_seed = points[mode], seed
    with ThreadPoolExecutor(len(MODES)) as pool:  # mostly waiting: both at once
        done = {mode: pool.submit(play, chain) for mode, chain in chains.items()}
    return {
        mode: future.exception() or future.result() for mode, future in done.items()
    }


@pytest.fixture(params=MODES)
def chain(request, chains, record_property):
    chain = chains[request.param]
    if isinstance(chain, BaseException):
        pytest.fail(f"the {request.param} chain failed: {chain!r}", pytrace=False)
    # In the junit record and the failure report of every test of the chain.
    record_property("kill_at", chain.kill_at)
    record_property("recover_seed", chain.recover_seed)
    return chain


def resumed_from(log) -> int | None:
    text = open(log).read()
    m = re.search(r"resumed from the recover checkpoint of global step (\d+)", text)
    return int(m.group(1)) if m else None


def fingerprints(log, kind: str) -> list[dict]:
    pat = rf"recover checkpoint {kind}: (\{{.*?\}})"
    return [json.loads(m) for m in re.findall(pat, open(log).read())]


def test_the_kill_point_was_hit_and_the_chain_finished(chain):
    where = (
        f"{chain.mode}: kill point {chain.kill_at}, RECOVER_SEED={chain.recover_seed}"
    )
    assert [r["stop"] for r in chain.runs] == [chain.kill_at, *PLANS[chain.mode]], where
    assert chain.runs[0]["rc"] == -signal.SIGKILL, where
    assert chain.runs[-1]["rc"] == 0, f"{where}: {chain.runs[-1]['log']}"


def test_no_process_of_a_run_outlives_it(chain):
    for run in chain.runs:
        assert run["survivors"] == [], f"{run['stop']}: {run['survivors']}"


def trained(lines: list[dict]) -> list[dict]:
    """The step lines of steps a run trained and reported (not those marked
    ``lost``: trained and checkpointed by the run before, never reported)."""
    return [s for s in lines if not s.get("lost")]


def test_each_run_resumes_at_the_step_after_its_checkpoint(chain):
    logged = []
    for run in chain.runs:
        if logged:
            step = resumed_from(run["log"])
            assert step is not None, open(run["log"]).read()[-2000:]
            # A step is checkpointed before it is logged, so no logged step is
            # lost and at most one unlogged one was kept: the resumed run marks
            # it lost (a kill between a step's checkpoint and its line).
            last_logged = logged[-1]["step"] - 1  # 0-based global step
            assert last_logged <= step <= last_logged + 1
            lost = [s["step"] for s in run["lines"] if s.get("lost")]
            if run["lines"]:
                assert lost == list(range(last_logged + 2, step + 2))
                assert trained(run["lines"])[0]["step"] - 1 == step + 1  # the next
        logged += run["lines"]
    assert logged[-1]["step"] == STEPS


def test_optimizer_and_schedule_come_back_as_saved(chain):
    for i, run in enumerate(chain.runs[1:], start=1):
        (restored,) = fingerprints(run["log"], "restored")
        saved = [f for r in chain.runs[:i] for f in fingerprints(r["log"], "saved")]
        assert restored in saved
        assert restored["scheduler_step"] == resumed_from(run["log"]) + 1
    # The LR of every step follows one linear warm-up over the epoch, never
    # restarting after a resume.
    lines = [s for r in chain.runs for s in trained(r["lines"])]
    for s in lines:
        assert s["lr"] == pytest.approx(LR * (s["step"] - 1) / STEPS, rel=1e-6)


def test_every_question_of_the_epoch_is_trained_exactly_once(chain):
    lines = read_jsonl(chain.log_file("questions.jsonl"))
    batches = {}
    for line in lines:
        if "questions" in line:  # a redone step: the last wins
            batches[line["step"]] = list(
                zip(line["questions"], line["passes"], strict=True)
            )
    assert sorted(batches) == list(range(STEPS))
    trained = [qp for batch in batches.values() for qp in batch]
    assert len(trained) == len(set(trained)) == STEPS * BATCH  # none twice a pass
    # What the last run handed out and did not train (its last line): the
    # epoch's questions still rolling out at the end, read ahead or rejected.
    assert "untrained" in lines[-1]
    left = [(q, p) for q, p in lines[-1]["untrained"]]
    epoch = [q for q, p in trained if p == 0] + [q for q, p in left if p == 0]
    ids = [row["id"] for row in read_jsonl(chain.out / "train.jsonl")]
    assert sorted(epoch) == sorted(ids) and len(ids) == QUESTIONS  # none skipped
    assert all(p in (0, 1) for _, p in trained + left)


def test_the_server_gets_the_checkpoint_weights_before_any_new_rollout(chain):
    events, routes = chain.events.all, chain.routes
    for i, run in enumerate(chain.runs[1:], start=1):
        version = f"weight_update_v{resumed_from(run['log']) + 1}"
        mine = [e for e in events if run["start"] <= e["t"] <= run["exited"]]
        restored = next(e for e in mine if e["path"] == routes.disk_update)
        assert restored["model_path"].endswith(version)
        rollouts = [e["t"] for e in mine if e["path"] == routes.generate]
        assert rollouts or run["stop"] == "server"
        assert all(restored["t_done"] <= t for t in rollouts)
        # ... and they are the weights the crashed run served after that step
        pushed = [
            e for e in events
            if e["t"] < chain.runs[i - 1]["exited"]
            and e["path"] == routes.disk_update
            and e["model_path"].endswith(version)
        ]  # fmt: skip
        assert pushed and pushed[-1]["digest"] == restored["digest"]


def test_a_server_gone_for_good_stops_the_run_with_a_clear_error(chains):
    chain = chains["spmd"]
    if isinstance(chain, BaseException):
        pytest.fail(f"the spmd chain failed: {chain!r}", pytrace=False)
    (run,) = [r for r in chain.runs if r["stop"] == "server"]
    log = open(run["log"]).read()
    assert run["rc"] == 1, log[-3000:]
    assert run["exited"] - run["server_killed"] <= STOP_BOUND_S
    # Noticed by the rollout (the ledger's RolloutStalled) or, when a step's
    # groups came back before the kill, by the weight update's
    # /pause_generation: either way the message says the servers are down
    # and names the one gone.
    assert "RolloutStalled" in log or "/pause_generation" in log, log[-3000:]
    assert "inference servers are down" in log
    assert f"Servers: {run['server_addr']}." in log
    step = resumed_from(run["log"])
    assert f"Last recover checkpoint: global step {step}." in log
    after = chain.runs[chain.runs.index(run) + 1]
    assert resumed_from(after["log"]) == step  # ... and the rerun resumes there


def test_faults_hit_the_run_and_no_nan_reached_the_loss(chains):
    chain = chains["spmd"]
    if isinstance(chain, BaseException):
        pytest.fail(f"the spmd chain failed: {chain!r}", pytrace=False)
    kinds = {e["fault"] for e in chain.events.all if e["path"] == "/generate"}
    assert {"error", "reset", "delay"} <= kinds
    for s in (s for r in chain.runs for s in trained(r["lines"])):
        assert math.isfinite(s["actor_loss"]) and math.isfinite(s["grad_norm"])
        for key in ("groups_rejected", "episodes_failed", "calls_retried"):
            assert isinstance(s[key], int) and s[key] >= 0

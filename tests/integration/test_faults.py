"""Engine faults through AReaL's real client: RemoteSGLangEngine, its workflow
executor and MemAgentWorkflow against a stand-in server that fails on purpose
(``standin.faults``; a stand-in-only feature)."""

import json
import threading
import time

import pytest
from areal.api.cli_args import GenerationHyperparameters, InferenceEngineConfig
from areal.engine.sglang_remote import RemoteSGLangEngine
from areal.utils import stats_tracker

from memagent_workflow.data.synthetic import make_synthetic
from standin.launch import StandinServer

WORKFLOW = "memagent_workflow.workflow.MemAgentWorkflow"
# ~10% of /generate calls fail; with seed 7 the first ten calls hold one of each.
FAULTS = "error=0.04,reset=0.03,delay=0.03,delay_s=3,seed=7"
TIMEOUT = 2.0  # rollout.request_timeout: a delayed call is a stalled server


def events(path):
    return (
        [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
    )


def faulty(tiny_model_dir, tmp_path, name, spec=FAULTS):
    log = tmp_path / f"{name}.events.jsonl"
    server = StandinServer(
        tiny_model_dir,
        log_file=tmp_path / f"{name}.log",
        extra_args=["--faults", spec, "--event-log", str(log)],
    )
    return server.start(), log


def rollout(server, tiny_model_dir, items, retries, **workflow):
    config = InferenceEngineConfig(
        backend="sglang:d1",
        consumer_batch_size=len(items),
        max_concurrent_rollouts=len(items),
        max_head_offpolicyness=0,
        setup_timeout=60,
        request_timeout=TIMEOUT,
        request_retries=retries,
    )
    engine = RemoteSGLangEngine(config)
    engine.initialize(addr=server.addr, train_data_parallel_size=1)
    stats_tracker.get("rollout").export(reset=True)
    kwargs = dict(
        gconfig=GenerationHyperparameters(max_tokens=1024, max_new_tokens=8),
        tokenizer=str(tiny_model_dir),
        chunk_tokens=96,
        max_memory_tokens=8,
        max_final_tokens=8,
        **workflow,
    )
    try:
        trajs = engine.rollout_batch(items, workflow=WORKFLOW, workflow_kwargs=kwargs)
    finally:
        engine.destroy()
    return trajs, stats_tracker.get("rollout").export(reset=True)


def total(stats, key):
    key = f"rollout/{key}"
    return round(stats.get(key, 0) * stats.get(f"{key}__count", 0))


def test_each_fault_fails_one_episode_and_is_counted(tiny_model_dir, tmp_path):
    # No retries anywhere: every injected fault must cost exactly one episode,
    # and with one episode per group, one rejected group.
    server, log = faulty(tiny_model_dir, tmp_path, "counted")
    items = make_synthetic(6, seed=11, num_docs=3)
    try:
        start = time.monotonic()
        trajs, stats = rollout(
            server, tiny_model_dir, items, retries=1, group_size=1, engine_retry_s=0
        )
        elapsed = time.monotonic() - start
    finally:
        server.stop()
    injected = [e for e in events(log) if e["path"] == "/generate" and e["fault"]]
    assert {e["fault"] for e in injected} == {"error", "reset", "delay"}
    assert total(stats, "rejected") == len(injected) == len(items) - len(trajs)
    assert total(stats, "memagent/episodes_failed") == len(injected)
    assert elapsed < 60  # bounded: a delayed call costs request_timeout, once


def test_a_server_killed_and_restarted_mid_rollout_loses_no_group(
    tiny_model_dir, tmp_path
):
    server, log = faulty(tiny_model_dir, tmp_path, "restart", spec="seed=0")
    items = make_synthetic(4, seed=12, num_docs=3)
    restarted = {}

    def kill_and_restart():
        while sum(e["path"] == "/generate" for e in events(log)) < 4:
            time.sleep(0.05)
        server.proc.kill()
        server.proc.wait()
        restarted["at"] = time.monotonic()
        again = StandinServer(
            tiny_model_dir,
            port=server.port,
            log_file=tmp_path / "restarted.log",
            extra_args=["--event-log", str(log)],
        )
        restarted["server"] = again.start()
        restarted["up"] = time.monotonic()

    killer = threading.Thread(target=kill_and_restart)
    killer.start()
    try:
        trajs, stats = rollout(
            server, tiny_model_dir, items, retries=3, group_size=2, engine_retry_s=60
        )
    finally:
        killer.join()
        server.stop()
        if "server" in restarted:
            restarted["server"].stop()
    assert len(trajs) == len(items)  # every group came back whole
    assert total(stats, "rejected") == 0
    assert total(stats, "memagent/episodes_failed") == 0
    assert total(stats, "memagent/calls_retried") > 0  # it did wait the outage out
    print(f"outage {restarted['up'] - restarted['at']:.1f}s")


@pytest.mark.parametrize(
    "spec, match",
    [("error=2", "not in"), ("oops=1", "bad item"), ("delay=0.1", "delay_s")],
)
def test_a_bad_fault_spec_is_refused(spec, match):
    from standin.faults import FaultPlan

    with pytest.raises(ValueError, match=match):
        FaultPlan.parse(spec)

"""What the smoke makes of its phase events: the table's rows, the rates of its
second step (``null`` where a phase did not run, never a constant), a JSON the
preflight's ``--measured`` reads as it is, and the launch it runs (every
section under the smoke's trial name, a key given twice given once)."""

from __future__ import annotations

import getpass
import json

import pytest

from memagent_workflow.preflight.rates import read_measured
from memagent_workflow.smoke import plan, report
from memagent_workflow.smoke.events import EventLog, read_events
from tests.unit.preflight_fakes import load


def write_events(path, phases):
    """``(run, phase, seconds, detail)`` in order, as children write them."""
    lines, t, counts = [], 1000.0, {}
    for run, phase, seconds, detail in phases:
        n = counts[(run, phase)] = counts.get((run, phase), 0) + 1
        lines.append({"run": run, "phase": phase, "event": "start", "t": t, "n": n})
        t += seconds
        end = {"run": run, "phase": phase, "event": "end", "t": t, "n": n}
        lines.append({**end, "seconds": seconds, **detail})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return read_events(path)


BENCH = {
    "servers": [
        {"server": "a", "turns": 64, "prompt_tokens": 6000, "new_tokens": 1024,
         "prefill_tokens_per_s": 30000.0, "decode_tokens_per_s": 40.0},
        {"server": "b", "turns": 64, "prompt_tokens": 6000, "new_tokens": 1024,
         "prefill_tokens_per_s": 10000.0, "decode_tokens_per_s": 20.0},
    ]
}  # fmt: skip
STEP = [
    ("train", "rollout", 50.0, {}),
    ("train", "logprob pass", 4.0, {}),
    ("train", "actor step", 10.0, {}),
    ("train", "weight update", 6.0, {}),
]


@pytest.fixture
def steps(tmp_path):
    path = tmp_path / "steps.jsonl"
    lines = [
        {"step": 1, "tokens": 999, "tokens_skipped": 0, "rows": 3, "elapsed_s": 50.0},
        {
            "step": 2,
            "tokens": 96000,
            "tokens_skipped": 16000,
            "rows": 10,
            "elapsed_s": 150.0,
        },  # fmt: skip
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_rates_come_from_the_second_step_and_the_bench(tmp_path, steps):
    events = write_events(
        tmp_path / "e.jsonl",
        [("train", "server bench", 9.0, BENCH), *STEP, *STEP],
    )
    rates = report.rates_of(
        events, steps, actor_gpus=4, context={"model": "m"}, update_passes=3
    )
    assert rates["decode_tokens_per_s"] == 30.0  # the servers' mean
    assert rates["prefill_tokens_per_s"] == 20000.0
    # 80,000 trained tokens (96,000 less 16,000 skipped) on 4 GPUs
    assert rates["actor_train_tokens_per_s"] == 80000 / (10.0 * 4)
    assert rates["actor_logp_tokens_per_s"] == 80000 / (4.0 * 4)
    assert rates["weight_update_s"] == 6.0
    assert rates["row_tokens"] == 8000 and rates["decode_batch"] == 64
    assert rates["model"] == "m"
    assert rates["actor_fixed_s"] is None  # no doubled logprob pass: nothing fitted


def test_the_repeated_logprob_pass_fits_each_passs_fixed_cost(tmp_path, steps):
    """4 s on the batch, 19 s on it 16 times over: 15 batches' worth of tokens
    took 15 s, so 1 s of each is per token and 3 s fixed. The update's tokens
    cost 3 forwards' worth (forward and backward): 3 s of its 10, the other 7
    fixed."""
    assert report.DOUBLED == "logprob pass x16"
    repeated = ("train", report.DOUBLED, 19.0, {})
    events = write_events(tmp_path / "e.jsonl", [*STEP, *STEP, repeated])
    rates = report.rates_of(events, steps, actor_gpus=4, context={}, update_passes=3)
    assert rates["actor_fixed_s"] == pytest.approx(3.0)
    assert rates["actor_train_tokens_per_s"] == pytest.approx(80000 / (3.0 * 4))
    assert rates["actor_update_fixed_s"] == pytest.approx(7.0)
    assert rates["actor_logp_tokens_per_s"] == pytest.approx(80000 / (1.0 * 4))
    assert rates["actor_row_tokens"] == 8000
    # step 2: 100 s of wall time, 89 of them its phases and the repeated pass
    timed = sum(s for _, _, s, _ in STEP) + 19.0
    assert rates["step_other_s"] == pytest.approx(100.0 - timed) == 11.0


def test_fewer_rows_than_actor_ranks_are_warned(steps):
    assert report.rows_warning(steps, actor_ranks=10) is None
    warning = report.rows_warning(steps, actor_ranks=16)
    assert "step 2 had 10 rows for 16 actor data-parallel ranks" in warning


def test_a_phase_that_did_not_run_leaves_its_rate_null(tmp_path, steps):
    events = write_events(tmp_path / "e.jsonl", STEP)  # one step, no bench
    rates = report.rates_of(events, steps, actor_gpus=1, context={}, update_passes=3)
    assert {k: rates[k] for k in report.RATE_UNITS} == dict.fromkeys(report.RATE_UNITS)
    text = report.table(report.phase_rows(events), rates, [], None)
    assert all(f"{k}: not measured" in text for k in report.RATE_UNITS)


def test_the_reference_pass_stands_for_the_logprob_rate_without_a_proximal_one(
    tmp_path, steps
):
    step = [s for s in STEP if s[1] != "logprob pass"] + [
        ("train", "ref logprob pass", 5.0, {})
    ]
    events = write_events(tmp_path / "e.jsonl", [*step, *step])
    rates = report.rates_of(events, steps, actor_gpus=1, context={}, update_passes=3)
    assert rates["actor_logp_tokens_per_s"] == 80000 / 5.0


def test_rows_label_the_first_rollout_and_number_repeated_phases(tmp_path):
    events = write_events(
        tmp_path / "e.jsonl",
        [("smoke", "model", 0.1, {}), *STEP, *STEP, ("resume", "resume", 30.0, {})],
    )
    labels = [(r["run"], r["phase"]) for r in report.phase_rows(events)]
    assert labels[:3] == [
        ("smoke", "model"), ("train", "first rollout"), ("train", "logprob pass (step 1)")
    ]  # fmt: skip
    assert ("train", "rollout (step 2)") in labels and labels[-1] == (
        "resume",
        "resume",
    )


def test_the_smokes_json_is_what_the_preflight_reads(tmp_path, steps):
    events = write_events(
        tmp_path / "e.jsonl", [("train", "server bench", 9.0, BENCH), *STEP, *STEP]
    )
    context = {"model": "Qwen/Qwen2.5-7B-Instruct", "device": "H100", "at": "now"}
    rates = report.rates_of(
        events, steps, actor_gpus=4, context=context, update_passes=3
    )
    path = tmp_path / "smoke.json"
    report.write_json(path, {"phases": report.phase_rows(events), "rates": rates})
    measured = read_measured(path)
    assert measured.rates == {
        k: rates[k] for k in report.RATE_UNITS if rates[k] is not None
    }  # a rate not measured (actor_fixed_s here) is left out
    assert "H100" in measured.label and str(path) in measured.label


def test_the_event_log_of_a_child_is_one_per_process(tmp_path, monkeypatch):
    """A phase the child's entry opens, its trainer closes."""
    import memagent_workflow.smoke.events as events_module

    monkeypatch.setattr(events_module, "_OWN", None)
    monkeypatch.setenv("MEMAGENT_SMOKE_EVENTS", str(tmp_path / "e.jsonl"))
    monkeypatch.setenv("MEMAGENT_SMOKE_RUN", "resume")
    EventLog.from_env().start("resume")
    EventLog.from_env().end("resume", resumed_after_step=2)
    (start, end) = read_events(tmp_path / "e.jsonl")
    assert (start.event, end.event, end.detail) == (
        "start", "end", {"resumed_after_step": 2}
    )  # fmt: skip


@pytest.fixture(scope="module")
def gpu_config():
    return load("config.yaml", "scheduler.type=local", "trial_name=run7")


def test_every_section_runs_under_the_smokes_trial(gpu_config):
    overrides = plan.train_overrides(gpu_config, groups=2)
    smoke = load("config.yaml", "scheduler.type=local", *overrides)
    assert smoke.trial_name == "run7-smoke"
    for section in plan.TRIAL_SECTIONS:
        if getattr(smoke, section, None) is not None:
            assert getattr(smoke, section).trial_name == "run7-smoke", section
    assert (smoke.total_train_steps, smoke.train_dataset.batch_size) == (2, 2)
    assert smoke.memagent.group_size == 2 and smoke.memagent.max_chunks == 2
    assert smoke.valid_dataset is None and smoke.recover.mode == "auto"
    # the launch itself is unchanged
    assert smoke.rollout.backend == gpu_config.rollout.backend
    assert smoke.actor.weight_update_mode == gpu_config.actor.weight_update_mode


def test_a_key_given_twice_is_given_once_the_later_value(gpu_config):
    argv = ["--config", "config.yaml", "total_train_steps=9", "scheduler.type=local"]
    found = plan.merged(argv, ["total_train_steps=2"])
    assert found == [
        "--config",
        "config.yaml",
        "scheduler.type=local",
        "total_train_steps=2",
    ]


def test_an_unknown_phase_deadline_is_refused(gpu_config):
    with pytest.raises(ValueError, match="--deadline engine: no such phase"):
        plan.deadlines(gpu_config, {"engine": 5.0})
    found = plan.deadlines(gpu_config, {"engine start": 5.0})
    assert found["engine start"] == 5.0
    assert found["model load"] == gpu_config.rollout.setup_timeout  # 1800 s


def test_a_new_smoke_removes_only_the_previous_smokes_files(tmp_path, monkeypatch):
    from areal.utils import name_resolve, names

    for attr in ("DEFAULT_REPOSITORY", "add", "add_subentry", "delete",
                 "clear_subtree", "get", "get_subtree", "find_subtree", "wait",
                 "reset", "watch_names"):  # fmt: skip
        monkeypatch.setattr(name_resolve, attr, getattr(name_resolve, attr))
    cfg = load(
        "config_cpu.yaml",
        f"cluster.fileroot={tmp_path / 'areal'}",
        f"cluster.name_resolve.nfs_record_root={tmp_path / 'nr'}",
    )
    user = getpass.getuser()
    name_resolve.reconfigure(cfg.cluster.name_resolve)
    for trial in ("trial0", "trial0-smoke", "trial0-smoke-eval"):
        for kind in ("logs", "checkpoints"):
            folder = tmp_path / "areal" / kind / user / "memagent-cpu" / trial
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "kept.txt").write_text(trial)
        key = f"{names.trial_root('memagent-cpu', trial)}/server"
        name_resolve.add(key, trial, delete_on_exit=False, replace=True)
    plan.clear_previous(cfg)
    left = sorted(
        str(p.relative_to(tmp_path / "areal")) for p in tmp_path.rglob("kept.txt")
    )
    assert left == [
        f"checkpoints/{user}/memagent-cpu/trial0/kept.txt",
        f"logs/{user}/memagent-cpu/trial0/kept.txt",
    ]
    assert name_resolve.get(f"{names.trial_root('memagent-cpu', 'trial0')}/server") == (
        "trial0"
    )
    with pytest.raises(name_resolve.NameEntryNotFoundError):
        name_resolve.get(f"{names.trial_root('memagent-cpu', 'trial0-smoke')}/server")


def test_the_fit_reads_two_sizes_far_apart():
    """50 ms on the batch, 350 ms on it 16 times over: 20 ms per batch's tokens,
    30 ms fixed. Two passes, as the fit of k = 2 had, give the same fit; no
    repeat, no fit; a repeat faster than its share clips to no fixed part, and
    one slower than every pass's own at most 90% of the single pass."""
    from memagent_workflow.preflight.actor_cost import fit_fixed

    assert fit_fixed(0.05, 0.35) == pytest.approx(0.03)
    assert fit_fixed(4.0, 6.0, times=2) == pytest.approx(2.0)
    assert fit_fixed(0.05, None) is None and fit_fixed(0.05, 0.05, times=1) is None
    assert fit_fixed(0.05, 2.0) == 0.0
    assert fit_fixed(0.05, 0.05) == pytest.approx(0.9 * 0.05)


def test_the_weight_update_rate_is_the_slower_of_steps_1_and_2(tmp_path, steps):
    # a disk update waits up to a second for its name-resolve entry, or not at all
    fast = [("train", "weight update", 0.07, {}) if e[1] == "weight update" else e
            for e in STEP]  # fmt: skip
    events = write_events(tmp_path / "e.jsonl", [*STEP, *fast])
    rates = report.rates_of(events, steps, actor_gpus=1, context={}, update_passes=3)
    assert rates["weight_update_s"] == pytest.approx(6.0)  # step 1's, not step 2's

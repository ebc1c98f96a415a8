"""The preflight's step model fed with measured rates (``--measured FILE``, the
smoke's JSON): hand-worked cases, the run's projection in GPU-hours and the
speed-ups, and a measured rate never replaced by a constant.

The cases use config_cpu.yaml with 2 chunks (3 turns) and a tokenizer that is
not there (templates not counted), so every number is worked by hand below:
a memory turn's prompt is memory 3 + chunk 6 = 9 tokens, its row 9 + 3 new =
12 tokens; a turn decodes max(3, 4) = 4 new tokens; 16 groups of 8 episodes,
all 16 in flight on one server: 128 turns at once; 16 x 8 x 3 rows of 12
tokens = 4,608 tokens a step on 1 actor GPU, with the proximal recompute (one
logprob pass) and no reference model (no KL).
"""

from __future__ import annotations

import json

import pytest

from examples import preflight
from memagent_workflow.preflight.budgets import turn_seconds
from memagent_workflow.preflight.projection import LOGLINEAR, SKIP_TIED, projection
from memagent_workflow.preflight.rates import (
    DECODE_TOKENS_PER_S,
    MEASURED,
    MeasuredFileError,
    check_model,
    read_measured,
)
from memagent_workflow.preflight.step import step_estimate
from tests.unit.preflight_fakes import changed, load, run_of, write_model

RATES = {  # chosen so that every step below comes out round
    "decode_tokens_per_s": 2.0,
    "prefill_tokens_per_s": 1152.0,
    "actor_train_tokens_per_s": 100.0,
    "actor_logp_tokens_per_s": 400.0,
    "weight_update_s": 5.0,
}


@pytest.fixture(scope="module")
def cpu_cfg():
    return load(
        "config_cpu.yaml",
        "memagent.max_chunks=2",
        "tokenizer_path=/nonexistent/tokenizer",
        "actor.path=/nonexistent/model",
    )


@pytest.fixture(scope="module")
def cfg(cpu_cfg):
    """The same launch on a node of 2 GPUs: the roles on GPUs of their own."""
    return changed(cpu_cfg, cluster__n_gpus_per_node=2)


def measured(tmp_path, name="smoke.json", **rates):
    path = tmp_path / name
    path.write_text(json.dumps({"rates": {**RATES, **rates}, "phases": []}))
    return read_measured(path)


def test_overlapped_step_is_the_longer_side_plus_the_sync(cfg, tmp_path):
    step = step_estimate(run_of(cfg, measured=measured(tmp_path)))
    # a turn: 4 new tokens at 2/s = 2 s, + 128 turns x 9 prompt tokens at
    # 1152/s = 1 s: 3 s; a group of 3 turns: 9 s, all 16 groups at once
    assert step.rollout_s == pytest.approx(9.0)
    assert step.update_s == pytest.approx(4608 / 100)  # 46.08 s
    assert step.logp_s == pytest.approx(4608 / 400) and step.logp_passes == 1
    assert step.actor_s == pytest.approx(57.6)
    assert step.overlapped and step.sync_s == 5.0
    assert step.seconds == pytest.approx(57.6 + 5.0)


def test_on_cpu_the_step_is_the_sum_the_roles_share_the_cores(cpu_cfg, tmp_path):
    step = step_estimate(run_of(cpu_cfg, measured=measured(tmp_path)))
    assert not step.overlapped
    assert step.seconds == pytest.approx(9.0 + 57.6 + 5.0)


FITTED = {  # the smoke's fixed and per-step costs (preflight/actor_cost.py)
    "actor_fixed_s": ("actor_s", 57.6 + 2 * 0.5),  # the update and 1 logprob pass
    "actor_update_fixed_s": ("actor_s", 57.6 + 0.5),  # the update's own, alone
    "actor_row_tokens": ("actor_s", 384 * 10 / 100 + 384 * 10 / 400),  # 384 rows
    "step_other_s": ("seconds", 57.6 + 5.0 + 2.0),
}


@pytest.mark.parametrize("key", sorted(FITTED))
def test_the_fixed_and_per_step_costs_measured_are_counted(cfg, tmp_path, key):
    value = {"actor_fixed_s": 0.5, "actor_update_fixed_s": 0.5}
    value.update(actor_row_tokens=10.0, step_other_s=2.0)
    step = step_estimate(run_of(cfg, measured=measured(tmp_path, **{key: value[key]})))
    what, expected = FITTED[key]
    assert getattr(step, what) == pytest.approx(expected)
    assert "(measured)" in step.describe()


def test_on_policy_step_is_the_sum(cfg, tmp_path):
    on_policy = changed(cfg, rollout__max_head_offpolicyness=0)
    step = step_estimate(run_of(on_policy, measured=measured(tmp_path)))
    assert not step.overlapped
    assert step.seconds == pytest.approx(9.0 + 57.6 + 5.0)


def test_the_projection_and_what_each_speed_up_saves(cfg, tmp_path):
    found = projection(run_of(cfg, measured=measured(tmp_path)))
    assert found.steps == 40 and found.steps_how == "total_train_steps"
    assert found.gpus == 2  # one server's GPU and one actor GPU
    assert found.hours == pytest.approx(40 * 62.6 / 3600)
    assert found.gpu_hours == pytest.approx(2 * 40 * 62.6 / 3600)
    saved = {s.override: s.step_s for s in found.savings}
    # loglinear drops the one logprob pass: 11.52 s of the actor's 57.6 s
    assert saved[LOGLINEAR] == pytest.approx((11.52,))
    # skipping 10/30/50% of the groups skips that share of all the actor's passes
    assert saved[SKIP_TIED] == pytest.approx((5.76, 17.28, 28.8))
    text = found.describe()
    assert "40 steps (total_train_steps) x ~63 s" in text
    assert f"{LOGLINEAR} saves 12 s per step" in text
    assert f"{SKIP_TIED} saves 6/17/29 s per step at 10%/30%/50% tied groups" in text


def test_a_rollout_bound_step_gains_nothing_from_the_actors_speed_ups(cfg, tmp_path):
    # a turn: 4 tokens at 0.1/s = 40 s + 1 s prefill; 3 turns: 123 s > 57.6 s
    found = projection(
        run_of(cfg, measured=measured(tmp_path, decode_tokens_per_s=0.1))
    )
    assert found.step.rollout_s == pytest.approx(123.0)
    assert found.step.seconds == pytest.approx(128.0)
    saved = {s.override: s.step_s for s in found.savings}
    assert saved[LOGLINEAR] == pytest.approx((0.0,))
    assert saved[SKIP_TIED] == pytest.approx((0.0, 0.0, 0.0))


def test_options_already_on_are_not_offered(cfg, tmp_path):
    on = changed(cfg, memagent__skip_tied_groups=True)
    on = changed(on, actor__prox_logp_method="loglinear")
    found = projection(run_of(on, measured=measured(tmp_path)))
    assert found.savings == () and found.step.logp_passes == 0
    assert found.step.actor_s == pytest.approx(46.08)


def test_steps_are_capped_by_the_epochs_over_the_rows(cfg, tmp_path):
    run = run_of(cfg, measured=measured(tmp_path))
    run.train_rows = 320  # 20 steps of 16 questions, one epoch
    found = projection(run)
    assert (found.steps, found.steps_how) == (20, "1 epochs of 20")
    capped = run_of(cfg, measured=measured(tmp_path), max_rows=320)
    capped.train_rows = 320  # only the first rows were read: the file may hold more
    assert projection(capped).steps == 40


def test_a_cpu_run_without_measured_rates_is_not_estimated(cpu_cfg):
    run = run_of(cpu_cfg)
    assert step_estimate(run) is None and projection(run) is None


# tree_token_share acts with tree training only: tests/unit/test_preflight_tree.py
@pytest.mark.parametrize(
    "key", sorted(set(MEASURED) - {"train_tflops", "tree_token_share", *FITTED})
)
def test_every_measured_rate_is_the_one_used(cfg, tmp_path, key):
    """Doubling a measured rate (halving a measured duration) moves its part of
    the step exactly as the file says: no constant stands in for it."""
    base = step_estimate(run_of(cfg, measured=measured(tmp_path)))
    doubled = {key: RATES[key] * 2}
    step = step_estimate(run_of(cfg, measured=measured(tmp_path, "b.json", **doubled)))
    expected = {
        "decode_tokens_per_s": ("rollout_s", 9.0 - 3 * 1.0),  # 2 s -> 1 s a turn
        "prefill_tokens_per_s": ("rollout_s", 9.0 - 3 * 0.5),  # 1 s -> 0.5 s
        "actor_train_tokens_per_s": ("update_s", 46.08 / 2),
        "actor_logp_tokens_per_s": ("logp_s", 11.52 / 2),
        "weight_update_s": ("sync_s", 10.0),
    }[key]
    assert getattr(step, expected[0]) == pytest.approx(expected[1])
    assert getattr(step, expected[0]) != pytest.approx(getattr(base, expected[0]))


def test_a_measured_tflops_replaces_the_constant_for_the_actors_flops(tmp_path):
    """Where the actor's tokens/s are not measured, its FLOPs run at the file's
    TFLOP/s: twice the default's, half the actor's time."""
    model = write_model(tmp_path / "Qwen2.5-7B-Instruct")
    gpu = load("config.yaml", "scheduler.type=local", f"actor.path={model}")
    default = step_estimate(run_of(gpu))
    path = tmp_path / "h100.json"
    path.write_text(json.dumps({"rates": {"train_tflops": 240.0}}))
    step = step_estimate(run_of(gpu, measured=read_measured(path)))
    assert step.actor_s == pytest.approx(default.actor_s / 2)
    assert "at 240 TFLOP/s (measured)" in step.actor_how
    assert (
        f"actor TFLOP/s: measured: {path}"
        in projection(run_of(gpu, measured=read_measured(path))).describe()
    )


def test_rates_of_another_model_are_refused(tmp_path):
    path = tmp_path / "smoke.json"
    rates = {**RATES, "model": "Qwen/Qwen2.5-1.5B-Instruct"}
    path.write_text(json.dumps({"rates": rates}))
    measured = read_measured(path)
    check_model(measured, "/models/Qwen2.5-1.5B-Instruct/")  # a local copy: its name
    with pytest.raises(MeasuredFileError, match="is not this run's actor.path"):
        check_model(measured, "Qwen/Qwen2.5-7B-Instruct")


def test_the_projection_says_where_every_rate_came_from(cfg, tmp_path):
    found = projection(run_of(cfg, measured=measured(tmp_path)))
    every = "decode, prefill, actor update, actor logprob pass, weight sync"
    assert f"rates: {every}: measured: {tmp_path / 'smoke.json'}" in found.describe()
    assert found.step.describe().count("(measured)") == 3  # update, logprob, sync
    _, how = turn_seconds(run_of(cfg, measured=measured(tmp_path)))
    assert how.count("(measured)") == 2  # decode and prefill
    assert f"{DECODE_TOKENS_PER_S:g}/s" not in how


def test_a_rate_missing_from_the_file_says_which_constant_stands_in(cfg, tmp_path):
    path = tmp_path / "partial.json"
    path.write_text(json.dumps({"rates": {"actor_train_tokens_per_s": 100.0}}))
    gpu = load("config.yaml", "scheduler.type=local", "actor.path=/nonexistent")
    _, how = turn_seconds(run_of(gpu, measured=read_measured(path)))
    assert f"not in {path}: default 20 tokens/s" in how


def test_a_flag_beside_the_rate_the_file_measured_is_refused(tmp_path, capsys):
    path = tmp_path / "smoke.json"
    path.write_text(json.dumps({"rates": RATES}))
    with pytest.raises(SystemExit) as exc:
        preflight.parse(["--measured", str(path), "--decode-tokens-per-s", "30"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert (
        "rates.decode_tokens_per_s is measured" in err
        and "--decode-tokens-per-s" in err
    )


@pytest.mark.parametrize(
    "content, says",
    [
        (None, "no such file"),
        ("{not json", "not a JSON file"),
        (json.dumps({"phases": []}), "no 'rates' object"),
        (json.dumps({"rates": {"decode_tokens": 3}}), "rates.decode_tokens: unknown"),
        (json.dumps({"rates": {"weight_update_s": "5"}}), "rates.weight_update_s: '5' is not a number"),
        (json.dumps({"rates": {"decode_tokens_per_s": -1}}), "rates.decode_tokens_per_s: -1 is not > 0"),
        (json.dumps({"rates": {"decode_tokens_per_s": None}}), "rates: no rate measured"),
    ],
)  # fmt: skip
def test_a_bad_file_is_refused_naming_the_file_and_the_field(tmp_path, content, says):
    path = tmp_path / "rates.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(MeasuredFileError) as exc:
        read_measured(path)
    assert str(path) in str(exc.value) and says in str(exc.value)

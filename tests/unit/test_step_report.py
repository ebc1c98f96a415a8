"""StepReport: AReaL's stats logger whose commit also writes the project's step report."""

from __future__ import annotations

import json

from areal.api import FinetuneSpec
from areal.api.cli_args import (
    BaseExperimentConfig,
    StatsLoggerConfig,
    TensorBoardConfig,
)
from areal.utils.stats_logger import StatsLogger

from memagent_workflow.trainer.step_report import (
    NO_ROLLOUT_STATS,
    StepReport,
    format_line,
    step_line,
)

STATS = {
    "rollout/memagent/reward": 0.5,
    "ppo_actor/n_seqs": 256.0,
    "rollout/memagent/episodes_failed": 0.25,
    "rollout/memagent/episodes_failed__count": 8,
    "timeperf/rollout": 1.234,
    "timeperf/rollout__count": 1,
}


def logger(tmp_path) -> StatsLogger:
    config = BaseExperimentConfig(experiment_name="exp", trial_name="t0")
    config.total_train_steps = 3
    config.stats_logger = StatsLoggerConfig(
        experiment_name="exp", trial_name="t0", fileroot=str(tmp_path),
        tensorboard=TensorBoardConfig(path=str(tmp_path / "tensorboard")),
    )  # fmt: skip
    spec = FinetuneSpec(total_train_epochs=1, dataset_size=10, train_batch_size=2)
    return StatsLogger(config, spec)


def test_the_step_line_takes_its_numbers_from_arealss_stats():
    line = step_line(STATS, global_step=4, elapsed_s=12.34)
    assert line["step"] == 5 and line["reward"] == 0.5 and line["rows"] == 256
    assert line["episodes_failed"] == 2  # a per-group mean times its count
    assert line["timing_s"] == {"rollout": 1.23} and line["elapsed_s"] == 12.3
    assert line["rollout_stats"] is True
    assert format_line(line).startswith("step 5: reward 0.500 | 256 rows")
    assert "0 groups rejected, 2 episodes failed" in format_line(line)


# A step whose export held the actor's and the controller's stats only: every
# group it trained finished (and was reported) before the previous step's export.
ACTOR_ONLY = {k: v for k, v in STATS.items() if not k.startswith("rollout/")}


def test_a_step_without_rollout_stats_says_so():
    line = step_line(ACTOR_ONLY, global_step=18, elapsed_s=60.0)
    assert line["rollout_stats"] is False and line["reward"] is None
    text = format_line(line)
    assert text.startswith(f"step 19: {NO_ROLLOUT_STATS} | 256 rows")
    assert "n/a" not in text and "groups rejected" not in text
    assert "rollout 1.23s" in text  # the trainer's own timings are still there


def test_commit_writes_arealss_stats_and_the_step_report(tmp_path):
    areal = logger(tmp_path)
    areal.load_state_dict({"last_commit_step": 1})  # as a recover checkpoint does
    report = StepReport(areal, title="exp/t0", chance=0.25)
    assert report.areal_logger is areal  # its writers are not opened twice
    assert report.state_dict() == {"last_commit_step": 1}
    report.commit(0, 2, 2, dict(STATS))
    report.commit(0, 3, 3, {**STATS, "eval-rollout/memagent/reward": 0.75})
    report.commit(0, 4, 4, dict(ACTOR_ONLY))
    assert report.state_dict() == {"last_commit_step": 4}  # AReaL's counter
    report.close()
    log_dir = tmp_path / "logs"
    steps = [json.loads(x) for x in next(log_dir.rglob("steps.jsonl")).open()]
    assert [s["step"] for s in steps] == [3, 4, 5]
    assert steps[1]["eval_reward"] == 0.75
    assert [s["rollout_stats"] for s in steps] == [True, True, False]
    assert next(log_dir.rglob("learning_curve.png")).stat().st_size > 0
    events = list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))
    assert len(events) == 1 and events[0].stat().st_size > 0
    assert report.bar.total == 3  # the run's steps (total_train_steps)
    assert "3 steps in" in report.summary() and "0.750 at the last" in report.summary()


def test_loading_a_recover_checkpoint_reaches_arealss_logger(tmp_path):
    areal = logger(tmp_path)
    report = StepReport(areal, title="exp/t0")
    report.load_state_dict({"last_commit_step": 7})
    assert areal.state_dict() == {"last_commit_step": 7}
    report.close()


def test_a_resumed_run_marks_the_steps_the_stopped_run_never_reported(tmp_path):
    """AReaL checkpoints a step before evaluating and committing it: a run that
    died in its eval (a lost node) resumes after a step no line reports."""
    first = StepReport(logger(tmp_path), title="exp/t0")
    first.commit(0, 0, 0, dict(STATS))
    first.commit(0, 1, 1, dict(STATS))  # step 3 (global 2) checkpointed, then lost
    first.close()
    resumed = StepReport(logger(tmp_path), title="exp/t0")
    resumed.commit(0, 3, 3, dict(STATS))
    resumed.commit(0, 4, 4, dict(STATS))
    resumed.close()
    steps = [json.loads(x) for x in next(tmp_path.rglob("steps.jsonl")).open()]
    assert [(s["step"], s.get("lost", False)) for s in steps] == [
        (1, False), (2, False), (3, True), (4, False), (5, False)
    ]  # fmt: skip
    assert "5 steps in" in resumed.summary()  # step 3 was trained all the same


def test_the_step_line_counts_the_actors_tokens_and_the_shared_prompts():
    stats = {
        **STATS,
        "memagent/actor_tokens_rows": 10000.0,
        "memagent/actor_tokens_computed": 3500.0,
        "rollout/memagent/prompt_tokens": 900.0,  # per group
        "rollout/memagent/prompt_tokens__count": 2,
        "rollout/memagent/prompt_tokens_shared": 600.0,
        "rollout/memagent/prompt_tokens_shared__count": 2,
    }
    line = step_line(stats, global_step=0, elapsed_s=1.0)
    assert line["actor_tokens_rows"] == 10000
    assert line["actor_tokens_computed"] == 3500
    assert line["rollout_prompt_tokens"] == 1800
    assert line["rollout_prompt_tokens_shared"] == 1200
    text = format_line(line)
    assert "actor computed 3500 of 10000 row tokens (65% saved)" in text
    assert "1200 of 1800 prompt tokens shared" in text
    # a packed step: the counts are there, no saving to show but padding's cost
    packed = step_line(
        {**stats, "memagent/actor_tokens_computed": 10240.0}, global_step=0, elapsed_s=1
    )
    assert "(-2% saved)" in format_line(packed)
    assert "saved" not in format_line(step_line(STATS, global_step=0, elapsed_s=1))

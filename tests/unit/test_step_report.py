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

from memagent_workflow.trainer.step_report import StepReport, format_line, step_line

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
    assert format_line(line).startswith("step 5: reward 0.500 | 256 rows")


def test_commit_writes_arealss_stats_and_the_step_report(tmp_path):
    areal = logger(tmp_path)
    areal.load_state_dict({"last_commit_step": 1})  # as a recover checkpoint does
    report = StepReport.take_over(areal, title="exp/t0", chance=0.25)
    assert report.summary_writer is areal.summary_writer  # not opened twice
    assert report.state_dict() == {"last_commit_step": 1}
    report.commit(0, 2, 2, dict(STATS))
    report.commit(0, 3, 3, {**STATS, "eval-rollout/memagent/reward": 0.75})
    report.close()
    log_dir = tmp_path / "logs"
    steps = [json.loads(x) for x in next(log_dir.rglob("steps.jsonl")).open()]
    assert [s["step"] for s in steps] == [3, 4]
    assert steps[1]["eval_reward"] == 0.75
    assert next(log_dir.rglob("learning_curve.png")).stat().st_size > 0
    events = list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))
    assert len(events) == 1 and events[0].stat().st_size > 0
    assert report.bar.total == 3  # the run's steps (total_train_steps)
    assert "2 steps in" in report.summary() and "0.750 at the last" in report.summary()

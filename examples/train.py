"""Train MemAgent with AReaL's PPO trainer (GRPO, grouping inside the workflow).

GPU, single controller:  python3 examples/train.py --config config.yaml scheduler.type=local
GPU, SPMD launcher:      python3 -m areal.infra.launcher.local examples/train.py \
                             --config config.yaml allocation_mode=sglang:d4p1t1+fsdp:d4p1t1
CPU stand-in (tiny model, a few steps):
                         uv run python examples/train.py --config config_cpu.yaml
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from areal.api.cli_args import load_expr_config
from areal.utils import logging
from areal.utils.saver import Saver
from areal.utils.stats_logger import StatsLogger
from datasets import Dataset, load_dataset

from memagent_workflow.config import (
    MemAgentGRPOConfig,
    config_sections,
    workflow_kwargs,
)
from memagent_workflow.trainer import MemAgentPPOTrainer

logger = logging.getLogger("MemAgentTrain")

WORKFLOW = "memagent_workflow.workflow.MemAgentWorkflow"
REQUIRED = ("question", "context", "answers")


def load_rows(path: str, role: str) -> Dataset:
    """A JSONL or parquet file of ``{id, question, context, answers}`` rows."""
    if not Path(path).exists():
        raise FileNotFoundError(
            f"{role} set {path} not found; write it with examples/prepare_data.py"
        )
    kind = "parquet" if path.endswith(".parquet") else "json"
    dataset = load_dataset(kind, data_files=path, split="train")
    missing = [k for k in REQUIRED if k not in dataset.column_names]
    if missing:
        raise ValueError(
            f"{path}: rows lack field(s) {missing}; convert the file with "
            "examples/prepare_data.py"
        )
    return dataset


def _total(s: dict, key: str) -> int:
    """A per-group mean times its count: the step's total."""
    return round(s.get(key, 0.0) * s.get(f"{key}__count", 0))


class StepReport:
    """One line per step (reward, rows, staleness, losses, faults, timings), as JSONL."""

    def __init__(self, commit, path: str):
        self.commit, self.path, self.start = commit, path, time.perf_counter()

    def __call__(self, epoch: int, step: int, global_step: int, stats):
        self.commit(epoch, step, global_step, stats)
        s = stats[0] if isinstance(stats, list) else stats
        staleness = "ppo_actor/update/version_stats/sample_staleness_theta"
        line = {
            "step": global_step + 1,
            "reward": s.get("rollout/memagent/reward"),
            "rows": int(s.get("ppo_actor/n_seqs", 0)),
            "staleness_avg": s.get(f"{staleness}_avg"),
            "staleness_max": s.get(f"{staleness}_max"),
            "oldest_rollout_version": s.get("rollout/memagent/oldest_version"),
            "memory_tokens": s.get("rollout/memagent/memory_tokens"),
            "grad_norm": s.get("ppo_actor/update/grad_norm"),
            "actor_loss": s.get("ppo_actor/update/actor_loss/avg"),
            "lr": s.get("ppo_actor/update/lr"),
            "groups_rejected": int(s.get("rollout/rejected__count", 0)),
            "episodes_failed": _total(s, "rollout/memagent/episodes_failed"),
            "calls_retried": _total(s, "rollout/memagent/calls_retried"),
            "eval_sub_em": s.get("eval-rollout/memagent/sub_em"),
            "timing_s": {
                k.removeprefix("timeperf/"): round(v, 2)
                for k, v in s.items()
                if k.startswith("timeperf/") and not k.endswith("__count")
            },
            "elapsed_s": round(time.perf_counter() - self.start, 1),
        }
        t = line["timing_s"]
        logger.info(
            f"step {line['step']}: reward {line['reward'] or 0:.3f} | "
            f"{line['rows']} rows | staleness avg {line['staleness_avg'] or 0:.2f} "
            f"max {line['staleness_max'] or 0:.0f} | {line['groups_rejected']} groups "
            f"rejected, {line['episodes_failed']} episodes failed, "
            f"{line['calls_retried']} calls retried | rollout {t.get('rollout', 0)}s "
            f"train {t.get('train_step', 0)}s weights {t.get('update_weights', 0)}s"
        )
        with open(self.path, "a") as f:
            f.write(json.dumps(line) + "\n")


def train(config: MemAgentGRPOConfig) -> None:
    train_set = load_rows(config.train_dataset.path, "train")
    valid_set = None
    if config.valid_dataset is not None:
        valid_set = load_rows(config.valid_dataset.path, "validation")
    eval_kwargs = workflow_kwargs(config, gconfig=config.eval_gconfig, group_size=1)
    with MemAgentPPOTrainer(
        config, train_dataset=train_set, valid_dataset=valid_set
    ) as trainer:
        if int(os.environ.get("RANK", "0")) == 0:
            log_dir = StatsLogger.get_log_path(config.stats_logger)
            report = StepReport(
                trainer.stats_logger.commit, os.path.join(log_dir, "steps.jsonl")
            )
            trainer.stats_logger.commit = report
        trainer.train(
            workflow=WORKFLOW,
            workflow_kwargs=workflow_kwargs(config),
            eval_workflow=WORKFLOW,
            eval_workflow_kwargs=eval_kwargs,
        )
    saved = Saver.get_model_save_root(
        config.saver.experiment_name, config.saver.trial_name, config.saver.fileroot
    )
    logger.info(f"HF checkpoints: {sorted(os.listdir(saved))} under {saved}")


def load_config(argv: list[str]) -> MemAgentGRPOConfig:
    """The config; a file with a ``standin:`` section is a CPU stand-in run."""
    config_cls = MemAgentGRPOConfig
    if "standin" in config_sections(argv):
        from standin.config import StandinGRPOConfig as config_cls
    config, _ = load_expr_config(argv, config_cls)
    return config


def main(argv: list[str]) -> None:
    config = load_config(argv)
    if hasattr(config, "standin"):
        from standin.cpu_job import cpu_job

        with cpu_job(config):
            train(config)
    else:
        train(config)
    logger.info("training finished")


if __name__ == "__main__":
    main(sys.argv[1:])

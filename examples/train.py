"""Train MemAgent with AReaL's PPO trainer (GRPO, grouping inside the workflow).

GPU, single controller:  python3 examples/train.py --config config.yaml scheduler.type=local
GPU, SPMD launcher:      python3 -m areal.infra.launcher.local examples/train.py \
                             --config config.yaml allocation_mode=sglang:d4p1t1+fsdp:d4p1t1
CPU stand-in (tiny model; config_cpu.yaml's run: section names the stand-in's code):
                         uv run python examples/train.py --config config_cpu.yaml
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any

from areal.utils import logging
from areal.utils.dynamic_import import import_from_string
from areal.utils.saver import Saver
from areal.utils.stats_logger import StatsLogger
from datasets import Dataset, load_dataset

from memagent_workflow.config import (
    MemAgentGRPOConfig,
    load_run_config,
    warmup_proportion,
    workflow_kwargs,
)
from memagent_workflow.infra.paths import make_shared_folders, resolve_paths
from memagent_workflow.infra.ray_cluster import ray_for
from memagent_workflow.infra.terminal import quiet_terminal
from memagent_workflow.trainer.ppo_trainer import MemAgentPPOTrainer
from memagent_workflow.workflow import MemAgentWorkflow

logger = logging.getLogger("MemAgentTrain")

WORKFLOW = "memagent_workflow.workflow.MemAgentWorkflow"
REQUIRED = ("id", "question", "context", "answers")


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


def set_warmup(config: MemAgentGRPOConfig, n_rows: int) -> None:
    """Turn ``warmup_steps`` into AReaL's warm-up proportion for this data."""
    steps = config.warmup_steps
    if steps is None or config.actor.optimizer is None:
        return
    total = config.total_train_epochs * (n_rows // config.train_dataset.batch_size)
    config.actor.optimizer.warmup_steps_proportion = warmup_proportion(steps, total)
    if steps > total:
        logger.warning(f"warm-up of {steps} steps is longer than the run ({total})")
    logger.info(f"LR warm-up: {min(steps, total)} of {total} steps")


def checked_workflow_kwargs(
    config: MemAgentGRPOConfig,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Training and validation workflow kwargs, each workflow built once here: a
    bad prompts file, reward name or token budget fails now, with its message,
    before any server or worker starts."""
    train_kwargs = workflow_kwargs(config)
    eval_kwargs = workflow_kwargs(
        config,
        gconfig=config.eval_gconfig,
        group_size=config.valid_group_size,
    )
    MemAgentWorkflow(**train_kwargs)
    MemAgentWorkflow(**eval_kwargs)
    return train_kwargs, eval_kwargs


def train(config: MemAgentGRPOConfig, workflow: str = WORKFLOW) -> None:
    """GRPO with ``workflow`` (an import path) for training rollouts."""
    train_set = load_rows(config.train_dataset.path, "train")
    valid_set = None
    if config.valid_dataset is not None:
        valid_set = load_rows(config.valid_dataset.path, "validation")
    set_warmup(config, len(train_set))
    train_kwargs, eval_kwargs = checked_workflow_kwargs(config)
    trainer_cls = import_from_string(config.run.trainer)
    if not (
        isinstance(trainer_cls, type) and issubclass(trainer_cls, MemAgentPPOTrainer)
    ):
        raise ValueError(
            f"run.trainer={config.run.trainer!r} is not a MemAgentPPOTrainer"
        )
    with trainer_cls(
        config, train_dataset=train_set, valid_dataset=valid_set
    ) as trainer:
        trainer.train(
            workflow=workflow,
            workflow_kwargs=train_kwargs,
            eval_workflow=WORKFLOW,
            eval_workflow_kwargs=eval_kwargs,
        )
    saved = Saver.get_model_save_root(
        config.saver.experiment_name, config.saver.trial_name, config.saver.fileroot
    )
    logger.info(f"HF checkpoints: {sorted(os.listdir(saved))} under {saved}")


def load_config(argv: list[str]) -> MemAgentGRPOConfig:
    """The config, parsed by the class its ``run.config`` names."""
    config = load_run_config(argv, MemAgentGRPOConfig)
    return resolve_paths(config)  # relative paths mean the same in every worker


def main(argv: list[str], workflow: str = WORKFLOW) -> None:
    config = load_config(argv)
    make_shared_folders(config.cluster)  # AReaL's schedulers require them
    with contextlib.ExitStack() as stack:
        # The terminal: step lines, a progress bar, warnings; all else in files.
        stack.enter_context(
            quiet_terminal(StatsLogger.get_log_path(config.stats_logger))
        )
        if config.run.job:  # what a cluster would provide (a CPU config's stand-in)
            stack.enter_context(import_from_string(config.run.job)(config))
        stack.enter_context(ray_for(config.scheduler.type))
        train(config, workflow)
    logger.info("training finished")


if __name__ == "__main__":
    main(sys.argv[1:])

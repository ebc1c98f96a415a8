"""Train MemAgent with AReaL's PPO trainer (GRPO, grouping inside the workflow).

GPU, single controller:  python3 examples/train.py --config config.yaml scheduler.type=local
GPU, SPMD launcher:      python3 -m areal.infra.launcher.local examples/train.py \
                             --config config.yaml allocation_mode=sglang:d4p1t1+fsdp:d4p1t1
CPU stand-in (tiny model, a few steps):
                         uv run python examples/train.py --config config_cpu.yaml
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from areal.utils import logging
from areal.utils.saver import Saver
from datasets import Dataset, load_dataset

from memagent_workflow.config import (
    MemAgentGRPOConfig,
    load_run_config,
    workflow_kwargs,
)
from memagent_workflow.trainer import MemAgentPPOTrainer

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


def train(config: MemAgentGRPOConfig) -> None:
    train_set = load_rows(config.train_dataset.path, "train")
    valid_set = None
    if config.valid_dataset is not None:
        valid_set = load_rows(config.valid_dataset.path, "validation")
    eval_kwargs = workflow_kwargs(config, gconfig=config.eval_gconfig, group_size=1)
    with MemAgentPPOTrainer(
        config, train_dataset=train_set, valid_dataset=valid_set
    ) as trainer:
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
    return load_run_config(argv, MemAgentGRPOConfig, "standin.config.StandinGRPOConfig")


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

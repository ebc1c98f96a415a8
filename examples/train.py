"""Train MemAgent with AReaL's PPO trainer (GRPO, grouping inside the workflow).

GPU, single controller:  python3 examples/train.py --config config.yaml scheduler.type=local
GPU, SPMD launcher:      python3 -m areal.infra.launcher.local examples/train.py \
                             --config config.yaml allocation_mode=sglang:d4p1t1+fsdp:d4p1t1
Without a GPU: the README's quick start.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from areal.utils import logging
from areal.utils.saver import Saver
from areal.utils.stats_logger import StatsLogger
from datasets import Dataset, load_dataset

from memagent_workflow.config import (
    MemAgentGRPOConfig,
    warmup_proportion,
    workflow_kwargs,
)
from memagent_workflow.infra.config_loader import ConfigError, exits_on_config_error
from memagent_workflow.infra.paths import load_entry_config, make_shared_folders
from memagent_workflow.infra.ray_cluster import ray_for
from memagent_workflow.infra.terminal import quiet_terminal
from memagent_workflow.trainer.ppo_trainer import MemAgentPPOTrainer
from memagent_workflow.workflow import MemAgentWorkflow

logger = logging.getLogger("MemAgentTrain")

WORKFLOW = "memagent_workflow.workflow.MemAgentWorkflow"
REQUIRED = ("id", "question", "context", "answers")

Job = Callable[[Any], AbstractContextManager[Any]]


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


def train_steps(config: MemAgentGRPOConfig, n_rows: int) -> tuple[int, int]:
    """``(schedule, run)``: the steps AReaL's LR schedule spans and the steps the
    run makes, for ``n_rows`` training rows.

    AReaL 1.0.4 builds the schedule over ``total_train_epochs`` x steps per epoch
    (its ``FinetuneSpec``), whatever ``total_train_steps`` says; its training loop
    stops at the smaller of that and ``total_train_steps``.
    """
    schedule = config.total_train_epochs * (n_rows // config.train_dataset.batch_size)
    limit = config.total_train_steps
    return schedule, schedule if limit is None else min(schedule, limit)


def set_warmup(config: MemAgentGRPOConfig, n_rows: int) -> None:
    """Turn ``warmup_steps`` into AReaL's warm-up proportion for this data.

    The proportion is taken of the schedule's span (what AReaL multiplies it
    by), so the warm-up is ``warmup_steps`` long however many steps the run
    makes; the log line and the warnings count the run's real steps.
    """
    schedule, run = train_steps(config, n_rows)
    limit = config.total_train_steps
    if limit is not None and limit > schedule:
        logger.warning(
            f"total_train_steps={limit}, but total_train_epochs="
            f"{config.total_train_epochs} over {n_rows} rows make {schedule} steps: "
            f"the run stops at {schedule} (raise total_train_epochs)"
        )
    steps = config.warmup_steps
    if steps is None or config.actor.optimizer is None:
        return
    config.actor.optimizer.warmup_steps_proportion = warmup_proportion(steps, schedule)
    if steps > run:
        logger.warning(f"warm-up of {steps} steps is longer than the run ({run})")
    logger.info(f"LR warm-up: {min(steps, run)} of {run} steps")


def checked_workflow_kwargs(
    config: MemAgentGRPOConfig,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Training and validation workflow kwargs, each workflow built once here: a
    bad prompts file, reward name or token budget fails now as a ``ConfigError``
    with its message (``main`` prints it, exit 2), before any server or worker
    starts."""
    try:
        train_kwargs = workflow_kwargs(config)
        eval_kwargs = workflow_kwargs(
            config,
            gconfig=config.eval_gconfig,
            group_size=config.valid_group_size,
        )
        MemAgentWorkflow(**train_kwargs)
        MemAgentWorkflow(**eval_kwargs)
    except ValueError as exc:  # PromptFileError, TurnTooLong, a reward's name
        raise ConfigError(str(exc)) from None
    return train_kwargs, eval_kwargs


def on_cluster(config: MemAgentGRPOConfig) -> AbstractContextManager[None]:
    """The job around training on a GPU cluster: nothing, as the model, the data
    and the servers are there already."""
    return contextlib.nullcontext()


def train(
    config: MemAgentGRPOConfig,
    workflow: str = WORKFLOW,
    trainer_cls: type[MemAgentPPOTrainer] = MemAgentPPOTrainer,
) -> None:
    """GRPO with ``trainer_cls`` and ``workflow`` (an import path) for training
    rollouts."""
    train_set = load_rows(config.train_dataset.path, "train")
    valid_set = None
    if config.valid_dataset is not None:
        valid_set = load_rows(config.valid_dataset.path, "validation")
    set_warmup(config, len(train_set))
    train_kwargs, eval_kwargs = checked_workflow_kwargs(config)
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


def load_config(
    argv: list[str], config_cls: type[MemAgentGRPOConfig] = MemAgentGRPOConfig
) -> MemAgentGRPOConfig:
    """``--config`` and its overrides (`load_entry_config`); a config for
    another entry stops here, naming that entry's command."""
    return load_entry_config(argv, config_cls, __file__)


def qualname(obj: Any) -> str:
    """``module.Name`` of a class or function, for the log (``Name`` alone
    when defined in the script being run)."""
    if obj.__module__ == "__main__":
        return obj.__qualname__
    return f"{obj.__module__}.{obj.__qualname__}"


@exits_on_config_error
def main(
    argv: list[str],
    workflow: str = WORKFLOW,
    *,
    config_cls: type[MemAgentGRPOConfig] = MemAgentGRPOConfig,
    trainer_cls: type[MemAgentPPOTrainer] = MemAgentPPOTrainer,
    job: Job = on_cluster,
) -> None:
    """Load the config with ``config_cls`` and train with ``trainer_cls`` inside
    ``job(config)``, what the machine provides around training (a GPU cluster:
    nothing). The defaults are the GPU run; the run logs the classes it got."""
    config = load_config(argv, config_cls)
    make_shared_folders(config.cluster)  # AReaL's schedulers require them
    with contextlib.ExitStack() as stack:
        # The terminal: step lines, a progress bar, warnings; all else in files.
        stack.enter_context(
            quiet_terminal(StatsLogger.get_log_path(config.stats_logger))
        )
        logger.info(
            f"config {config_cls.__name__}, trainer {qualname(trainer_cls)}, "
            f"job {qualname(job)}"
        )
        stack.enter_context(job(config))
        stack.enter_context(ray_for(config))
        train(config, workflow, trainer_cls)
    logger.info("training finished")


if __name__ == "__main__":
    main(sys.argv[1:])

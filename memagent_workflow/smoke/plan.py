"""What the smoke changes in the planned launch, and how long each phase may take.

The launch stays as configured: model, engine, layout, scheduler, weight-update
mode, FSDP or LoRA settings, prompts, staleness. The smoke makes it small
(``groups`` questions of 2 episodes a step, at most 2 chunks, at most 2
mini-batches, no validation set), runs it under its own trial name
(``<trial_name>-smoke``, every section's ``trial_name`` set, so nothing of the
real trial is read or written), saves an HF checkpoint after step 2 and a
recover checkpoint after every step, and then resumes for one more step.
A new smoke first removes the previous smoke's files of that trial (its
checkpoints, logs and name-resolve entries; never another trial's).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from areal.utils import name_resolve, names
from areal.utils.saver import Saver
from areal.utils.stats_logger import StatsLogger

from memagent_workflow.preflight.actor_cost import REPEAT
from memagent_workflow.smoke.report import DOUBLED

SUFFIX = "-smoke"
STEPS = 2  # then one more, resumed
MAX_CHUNKS = 2
EPISODES = 2
# Sections of a training config that name the trial.
TRIAL_SECTIONS = (
    "rollout", "actor", "ref", "saver", "recover", "evaluator", "stats_logger",
    "perf_tracer",
)  # fmt: skip
PHASES = (
    "model", "preflight", "launch", "model load", "engine start", "server bench",
    "rollout", "ref logprob pass", "logprob pass", DOUBLED, "actor step",
    "weight update",
    "save", "recover checkpoint", "resume", "resumed step", "eval",
)  # fmt: skip


@contextlib.contextmanager
def no_config_copy() -> Iterator[None]:
    """AReaL's loader copies the config into its trial's log folder, on rank 0
    only (``load_expr_config``): the smoke reads the launch's configs (the
    training's, the eval's) as rank 1, so that nothing of their trials is
    written."""
    saved = os.environ.get("RANK")
    os.environ["RANK"] = "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("RANK", None)
        else:
            os.environ["RANK"] = saved


def smoke_trial(config: Any) -> str:
    return f"{config.trial_name}{SUFFIX}"


def train_overrides(config: Any, groups: int, steps: int = STEPS) -> list[str]:
    """The overrides, after the launch's own, of the smoke's training runs."""
    trial = smoke_trial(config)
    chunks = min(config.memagent.max_chunks or MAX_CHUNKS, MAX_CHUNKS)
    found = [
        f"trial_name={trial}",
        *(
            f"{s}.trial_name={trial}"
            for s in TRIAL_SECTIONS
            if hasattr(getattr(config, s, None), "trial_name")
        ),
        f"total_train_steps={steps}",
        f"train_dataset.batch_size={groups}",
        f"rollout.max_concurrent_rollouts={groups}",
        f"rollout.consumer_batch_size={groups}",
        f"memagent.group_size={EPISODES}",
        f"memagent.max_chunks={chunks}",
        f"actor.ppo_n_minibatches={min(config.actor.ppo_n_minibatches, 2)}",
        "valid_dataset=null",
        f"saver.freq_steps={STEPS}",
        "saver.freq_epochs=null",
        "saver.freq_secs=null",
        "recover.mode=auto",
        "recover.freq_steps=1",
        "recover.freq_epochs=null",
        "recover.freq_secs=null",
    ]
    if getattr(config.stats_logger.tensorboard, "path", None):
        found.append(f"stats_logger.tensorboard.path={smoke_dir(config)}/tensorboard")
    return found


def merged(*lists: list[str]) -> list[str]:
    """Arguments in order, a later ``key=value`` replacing an earlier one of its
    key (Hydra refuses a key given twice); flags and their values kept."""
    found: dict[str, str] = {}
    for i, arg in enumerate(a for group in lists for a in group):
        key = arg.split("=", 1)[0] if "=" in arg and not arg.startswith("-") else i
        found.pop(key, None)
        found[key] = arg
    return list(found.values())


def smoke_dir(config: Any) -> Path:
    """The smoke's own folder (logs, events, JSON), in the smoke trial's logs."""
    log = StatsLogger.get_log_path(
        experiment_name=config.experiment_name,
        trial_name=smoke_trial(config),
        fileroot=config.cluster.fileroot,
    )
    return Path(log) / "smoke"


def deadlines(config: Any, given: dict[str, float]) -> dict[str, float]:
    """Seconds each phase may take: ``given``, else from the config's budgets."""
    setup = max(float(config.rollout.setup_timeout), 900.0)
    request = float(config.rollout.request_timeout)
    found = {
        "model": 60.0,
        "preflight": 900.0,
        "launch": 900.0,
        "model load": setup,
        "engine start": setup,
        "server bench": request,
        "rollout": request,
        "ref logprob pass": request,
        "logprob pass": request,
        DOUBLED: REPEAT * request,
        "actor step": request,
        "weight update": 900.0,
        "save": 1800.0,
        "recover checkpoint": 1800.0,
        "resume": 900.0 + 2 * setup + 1800.0,
        "resumed step": 3 * request,
        "eval": 900.0 + setup + request,
    }
    unknown = sorted(set(given) - set(found))
    if unknown:
        raise ValueError(
            f"--deadline {unknown[0]}: no such phase (phases: {', '.join(PHASES)})"
        )
    return {**found, **given}


def clear_previous(config: Any) -> None:
    """Remove the previous smoke's checkpoints, logs and name-resolve entries of
    the smoke trial (and of its eval): a resumed smoke would start from them."""
    exp, root = config.experiment_name, config.cluster.fileroot
    name_resolve.reconfigure(config.cluster.name_resolve)
    for trial in (smoke_trial(config), f"{smoke_trial(config)}-eval"):
        assert trial.endswith((SUFFIX, f"{SUFFIX}-eval")), trial
        for path in (
            Saver.get_save_root(exp, trial, root),
            StatsLogger.get_log_path(
                experiment_name=exp, trial_name=trial, fileroot=root
            ),
        ):
            if Path(path).name == trial:
                shutil.rmtree(path, ignore_errors=True)
        name_resolve.clear_subtree(names.trial_root(exp, trial))

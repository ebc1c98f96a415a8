"""The smoke's inputs: the model it will load, the checkpoint its training saved,
and the few eval samples it reads with it."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

from areal.utils.saver import Saver

from memagent_workflow.data.files import read_records, write_json
from memagent_workflow.eval import sets
from memagent_workflow.smoke.plan import smoke_trial
from memagent_workflow.smoke.processes import PhaseFailed

_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")
_STEP = re.compile(r"globalstep(\d+)$")


def check_model(path: str) -> str:
    """What ``actor.path`` is, or `PhaseFailed` ("model") if it cannot load: a
    folder needs its ``config.json``; a hub id not cached is downloaded by
    AReaL at start (within ``rollout.setup_timeout``)."""
    from memagent_workflow.preflight.model import weights_local

    folder = Path(path).expanduser()
    if folder.is_dir():
        if not (folder / "config.json").is_file():
            raise PhaseFailed("model", f"actor.path={path}: no config.json in it")
        return f"{path}: a local model"
    if folder.exists():
        raise PhaseFailed("model", f"actor.path={path}: not a folder")
    if _HUB_ID.match(path) and not path.startswith("."):
        cached = "cached" if weights_local(path) else "not cached: downloaded at start"
        return f"{path}: a hub id, {cached}"
    raise PhaseFailed(
        "model", f"actor.path={path}: no such folder, and not a hub id (ORG/NAME)"
    )


def last_checkpoint(config: Any) -> Path:
    """The smoke trial's last HF checkpoint."""
    root = Path(
        Saver.get_model_save_root(
            config.experiment_name, smoke_trial(config), config.cluster.fileroot
        )
    )
    saved = [
        (int(m.group(1)), p) for p in root.iterdir() if (m := _STEP.search(p.name))
    ]
    if not saved:
        raise PhaseFailed("eval", f"no HF checkpoint under {root} after training")
    return max(saved)[1]


def eval_length(eval_config: Any) -> int:
    """The eval config's first RULER-HQA length (documents per sample)."""
    lengths = eval_config.eval.lengths or sets.DEFAULT_LENGTHS
    return int(lengths[0])


def eval_subset(eval_config: Any, folder: Path, samples: int) -> list[str]:
    """The first ``samples`` questions of the eval config's first length,
    copied to ``folder``; the overrides that read them."""
    n = eval_length(eval_config)
    source = sets.eval_file(eval_config.eval.data_root, n)
    if not source.is_file():
        raise PhaseFailed(
            "eval",
            f"{source}: no such file; write it with examples/prepare_eval_data.py "
            "(docs/eval.md) or give --eval-config",
        )
    rows = list(itertools.islice(read_records(source), samples))
    write_json(sets.eval_file(folder, n), rows)
    return [f"eval.data_root={folder}"]


def eval_argv(
    config: Any, eval_config_path: str, eval_config: Any, folder: Path, samples: int
) -> list[str]:
    """The eval run: the eval config on the smoke's checkpoint, with the
    training launch's engine, layout and scheduler, on ``samples`` questions of
    one length; its results in ``folder``."""
    root = config.cluster.fileroot
    argv = [
        "--config", eval_config_path,
        f"actor.path={last_checkpoint(config)}",
        f"rollout.backend={config.rollout.backend}",
        f"scheduler.type={config.scheduler.type or 'null'}",
        f"experiment_name={config.experiment_name}",
        f"trial_name={smoke_trial(config)}-eval",
        f"cluster.fileroot={root}",
        f"eval.output_dir={folder / 'eval'}",
        f"eval.lengths=[{eval_length(eval_config)}]",
        "eval.resume=false",
        f"eval.concurrency={samples}",
    ]  # fmt: skip
    if list(eval_config.eval.tasks) != ["ruler_hqa"]:  # RULER-HQA only
        argv.append("eval.tasks=[ruler_hqa]")
    if config.cluster.name_resolve.type == "nfs":
        argv.append(
            f"cluster.name_resolve.nfs_record_root="
            f"{config.cluster.name_resolve.nfs_record_root}"
        )
    return argv

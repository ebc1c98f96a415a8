"""Recover checkpoints that a crash while writing them cannot destroy.

AReaL 1.0.4 writes a recover checkpoint in place, over the previous one: the
model and optimizer (DCP) into ``<save root>/<model>/recover_checkpoint`` and the
step, data loader and timer state into ``<save root>/recover_info``. A crash
while writing (minutes for a 7B model with its optimizer) leaves a mix of the
two steps, or no readable state, and the next run starts over from step 0.

`AtomicRecoverHandler` moves the previous checkpoint aside (``*.prev``, a
rename) before AReaL writes the new one, marks the new one complete
(``recover_info/COMMITTED``) once AReaL is done, and only then deletes the old
one. `restore_interrupted_dump`, run before AReaL reads a checkpoint, puts the
previous one back if the last write did not complete.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch.distributed as dist
from areal.api import FinetuneSpec
from areal.api.cli_args import RecoverConfig
from areal.utils import logging
from areal.utils.recover import RecoverHandler, RecoverInfo
from areal.utils.saver import Saver

logger = logging.getLogger("RecoverCheckpoint")

COMMITTED = "COMMITTED"
PREV = ".prev"
CHECKPOINT_DIR = "recover_checkpoint"


def _rank0() -> bool:
    return not dist.is_initialized() or dist.get_rank() == 0


def recover_dirs(config: RecoverConfig) -> tuple[Path, list[Path]]:
    """The ``recover_info`` folder and every model's ``recover_checkpoint`` folder."""
    root = Path(
        Saver.get_save_root(config.experiment_name, config.trial_name, config.fileroot)
    )
    info = Path(
        RecoverHandler.recover_info_path(
            config.experiment_name, config.trial_name, config.fileroot
        )
    )
    models = sorted(
        p / CHECKPOINT_DIR
        for p in root.iterdir()
        if p.is_dir() and not p.is_symlink() and not p.name.startswith("recover_info")
    )
    return info, models


def _with_prev(path: Path) -> Path:
    return path.with_name(path.name + PREV)


def restore_interrupted_dump(config: RecoverConfig) -> str | None:
    """Undo a recover-checkpoint write that did not complete; say what was done."""
    if config.mode in ("disabled", "off") or not _rank0():
        return None
    info, models = recover_dirs(config)
    dirs = [info, *models]
    prevs = [_with_prev(d) for d in dirs if _with_prev(d).exists()]
    if not prevs:
        return None
    if _complete(info) != _with_prev(info):
        # Either the new checkpoint is complete (only the old one's removal was
        # cut short) or there is no complete old one to go back to.
        for p in prevs:
            shutil.rmtree(p, ignore_errors=True)
        return None
    for d in dirs:
        prev = _with_prev(d)
        if prev.exists():
            shutil.rmtree(d, ignore_errors=True)
            prev.rename(d)
    message = (
        "the last recover checkpoint was cut short while being written; restored "
        f"the previous one (global step {_committed_step(info)})"
    )
    logger.warning(message)
    return message


def _complete(info: Path) -> Path | None:
    """The ``recover_info`` folder a rerun resumes from: ``info`` when complete,
    else the complete one set aside beside it (None: a fresh start)."""
    return next(
        (f for f in (info, _with_prev(info)) if (f / COMMITTED).is_file()), None
    )


def resumable_step(info: Path) -> int | None:
    """The global step a rerun resumes after, read from the ``recover_info``
    folder ``info`` as `restore_interrupted_dump` will leave it."""
    folder = _complete(info)
    return None if folder is None else _committed_step(folder)


def _committed_step(info: Path) -> int | None:
    try:
        return int(json.loads((info / COMMITTED).read_text())["global_step"])
    except (OSError, ValueError, KeyError):
        return None


class AtomicRecoverHandler(RecoverHandler):
    """AReaL's `RecoverHandler` whose checkpoints are replaced only once complete."""

    @classmethod
    def resuming(
        cls,
        config: RecoverConfig,
        ft_spec: FinetuneSpec,
        recover_info: RecoverInfo | None,
    ) -> AtomicRecoverHandler:
        """A handler built as `PPOTrainer.__init__` builds AReaL's (``config`` is
        ``config.recover``), then given what AReaL's ``load`` restores into a
        handler: the checkpoint timer, from ``recover_info`` (None: a fresh start).

        AReaL builds and uses its handler inside ``__init__``, with no hook for
        the class, so the trainer builds this one after it; ``RecoverHandler.load``
        is pinned in ``areal_internals/pinned.py`` in case it starts restoring more."""
        handler = cls(config, ft_spec)
        if recover_info is not None:
            handler.freq_ctl.load_state_dict(recover_info.checkpoint_info)
        return handler

    def dump(self, engine: Any, step_info: Any, *args: Any, **kwargs: Any) -> None:
        self._set_aside_done = False
        before = self.last_step_info
        super().dump(engine, step_info, *args, **kwargs)
        if self.last_step_info is not before:  # AReaL wrote a checkpoint
            self._commit(step_info)

    def _save_checkpoint(self, engine: Any, name: str = "default", **kwargs: Any):
        # Called by AReaL's dump only once it has decided to write, before writing.
        if not getattr(self, "_set_aside_done", False):
            self._set_aside()
            self._set_aside_done = True
        super()._save_checkpoint(engine, name=name, **kwargs)

    def _set_aside(self) -> None:
        if _rank0():
            info, models = recover_dirs(self.config)
            complete = (info / COMMITTED).is_file()
            for d in (info, *models):
                prev = _with_prev(d)
                shutil.rmtree(prev, ignore_errors=True)  # older than the live one
                if d.exists() and complete:
                    d.rename(prev)
                elif d.exists():  # what a cut-short write left: nothing to keep
                    shutil.rmtree(d)
        if dist.is_initialized():
            dist.barrier()

    def _commit(self, step_info: Any) -> None:
        if not _rank0():
            return
        info, models = recover_dirs(self.config)
        marker = {
            "global_step": step_info.global_step,
            "epoch": step_info.epoch,
            "epoch_step": step_info.epoch_step,
        }
        tmp = info / (COMMITTED + ".tmp")
        tmp.write_text(json.dumps(marker))
        with open(tmp) as f:
            os.fsync(f.fileno())
        tmp.replace(info / COMMITTED)
        for d in (info, *models):
            shutil.rmtree(_with_prev(d), ignore_errors=True)
        logger.info(f"recover checkpoint of global step {step_info.global_step} done")

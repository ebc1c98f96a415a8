"""The trial's newest HF checkpoint under one name: ``<trial's checkpoint folder>/latest``.

AReaL saves each HF checkpoint in its own folder,
``{fileroot}/checkpoints/{user}/{experiment}/{trial}/default/epoch{E}epochstep{S}globalstep{G}``.
After every save the trainer points the link ``latest`` beside ``default/`` at
the complete folder of the highest global step, so the eval, ``ask`` and the
service take ``actor.path=.../{trial}/latest`` whatever step the run ended at.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from areal.utils.saver import Saver

LATEST = "latest"
_STEP = re.compile(r"globalstep(\d+)$")
# A full model's folder holds config.json; a LoRA adapter's, adapter_config.json.
_COMPLETE = ("config.json", "adapter_config.json")


def latest_link(experiment: str, trial: str, fileroot: str) -> Path:
    """Where the link is: the trial's checkpoint folder, beside ``default/``."""
    return Path(Saver.get_save_root(experiment, trial, fileroot)) / LATEST


def newest_checkpoint(model_root: Path) -> Path | None:
    """The complete HF checkpoint of the highest global step under ``model_root``
    (AReaL's ``default/`` folder), or None."""
    if not model_root.is_dir():
        return None
    saved = [
        (int(m.group(1)), p)
        for p in model_root.iterdir()
        if (m := _STEP.search(p.name)) and any((p / f).is_file() for f in _COMPLETE)
    ]
    return max(saved)[1] if saved else None


def point_latest(experiment: str, trial: str, fileroot: str) -> Path | None:
    """Point ``latest`` at the newest complete HF checkpoint (a relative link,
    replaced atomically); the link, or None when nothing is saved yet."""
    link = latest_link(experiment, trial, fileroot)
    newest = newest_checkpoint(link.parent / "default")
    if newest is None:
        return None
    tmp = link.with_name(f".{LATEST}.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(newest.relative_to(link.parent))
    os.replace(tmp, link)
    return link

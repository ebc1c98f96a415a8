"""File systems: ``cluster.fileroot`` and the name-resolve root exist or can be
created and are writable; on several nodes they must be one shared file system;
the disk holds the checkpoints the saver and recover keep.

Disk: AReaL's saver keeps every HF checkpoint (compute dtype), recover writes
one checkpoint in place (storage-dtype weights and optimizer state, DCP), and
this project's atomic recover keeps the previous one until the new one is
complete, so two at the peak.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from memagent_workflow.preflight.memory_estimate import DTYPE_BYTES
from memagent_workflow.preflight.verdict import Check, fail, not_applicable, ok, warn

if TYPE_CHECKING:
    from memagent_workflow.preflight.run import Run

FAMILY = "files"
NETWORK_FS = (
    "nfs",
    "lustre",
    "gpfs",
    "beegfs",
    "cifs",
    "smb",
    "ceph",
    "glusterfs",
    "fuse.juicefs",
    "wekafs",
)


def existing_ancestor(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def writable(folder: Path) -> str | None:
    """None when a file can be written in ``folder``, else why not."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            return None
    except OSError as exc:
        return f"{folder}: {exc.strerror or exc}"


def on_network_fs(path: Path) -> tuple[bool, str]:
    """Whether ``path`` lies on a network file system, and its mount's type."""
    real = os.path.realpath(path)
    best = None
    for part in psutil.disk_partitions(all=True):
        mount = part.mountpoint
        if real == mount or real.startswith(mount.rstrip("/") + "/"):
            if best is None or len(mount) > len(best.mountpoint):
                best = part
    if best is None:
        return False, "unknown"
    kind = best.fstype.lower()
    shared = any(k in kind for k in NETWORK_FS) or (
        ":" in best.device and not best.device.startswith("/dev")
    )
    return shared, kind


def check_folder(run: Run, name: str, value: str) -> Check:
    path = Path(value)
    base = existing_ancestor(path)
    state = "exists" if base == path.absolute() else f"to be created under {base}"
    if base.exists() and not base.is_dir():
        return fail(FAMILY, name, f"{value}: {base} is a file", "a writable folder")
    why = writable(base)
    if why:
        return fail(
            FAMILY,
            name,
            f"{value} ({state}): not writable: {why}",
            "a writable folder",
            f"point {name} at a folder you can write",
        )
    nodes = run.config.cluster.n_nodes
    if nodes <= 1:
        return ok(FAMILY, name, f"{value} ({state}), writable", "a writable folder")
    shared, kind = on_network_fs(base)
    needed = f"writable, one file system shared by all {nodes} nodes"
    if shared:
        return ok(FAMILY, name, f"{value} ({state}) on {kind}", needed)
    if run.options.shared_fs:
        return ok(
            FAMILY,
            name,
            f"{value} ({state}) on {kind}, stated shared (--shared-fs)",
            needed,
        )
    return fail(
        FAMILY,
        name,
        f"{value} ({state}) on {kind}: not a network file system",
        needed,
        "every node must see the same folder at the same path; use a shared "
        "file system, or pass --shared-fs if this one is shared",
    )


def check_fileroot(run: Run) -> Check:
    return check_folder(run, "cluster.fileroot", run.config.cluster.fileroot)


def check_name_resolve(run: Run) -> Check:
    nr = run.config.cluster.name_resolve
    name = "name_resolve.nfs_record_root"
    if nr.type != "nfs":
        return not_applicable(FAMILY, name, f"name_resolve.type {nr.type}")
    return check_folder(run, name, nr.nfs_record_root)


def train_steps(run: Run) -> int | None:
    c = run.config
    if run.train_rows is None:
        return c.total_train_steps
    per_epoch = run.train_rows // c.train_dataset.batch_size
    steps = c.total_train_epochs * per_epoch
    return min(steps, c.total_train_steps) if c.total_train_steps else steps


def hf_saves(run: Run, steps: int) -> int:
    """Steps at which AReaL's saver writes an HF checkpoint."""
    s = run.config.saver
    per_epoch = (
        run.train_rows // run.config.train_dataset.batch_size if run.train_rows else 0
    )
    saves = 0
    for step in range(1, steps + 1):
        by_steps = bool(s.freq_steps) and step % s.freq_steps == 0
        by_epochs = (
            bool(s.freq_epochs and per_epoch)
            and step % (per_epoch * s.freq_epochs) == 0
        )
        saves += by_steps or by_epochs
    return max(saves, 1)


def check_disk(run: Run) -> Check:
    name = "disk for checkpoints"
    if run.is_eval:
        return not_applicable(FAMILY, name, "eval writes results only")
    shape = run.model[0]
    if shape is None:
        return not_applicable(FAMILY, name, "model size unknown (no config.json)")
    actor = run.config.actor
    n = shape.params
    hf = n * DTYPE_BYTES[actor.dtype]
    store = DTYPE_BYTES[actor.optimizer_dtype]
    recover = n * store * (1 if run.config.recover.no_save_optim else 3)
    steps = train_steps(run)
    saves = hf_saves(run, steps) if steps else 1
    need = saves * hf + 2 * recover
    base = existing_ancestor(Path(run.config.cluster.fileroot))
    free = shutil.disk_usage(base).free
    found = f"{free / 1e9:.0f} GB free at {base}"
    steps_how = f"{steps} steps" if steps else "steps unknown (no rows read)"
    needed = (
        f"{need / 1e9:.0f} GB: {saves} HF checkpoint(s) x {hf / 1e9:.0f} GB ({steps_how})"
        f" + 2 recover x {recover / 1e9:.0f} GB"
    )
    if free < need:
        return fail(
            FAMILY,
            name,
            found,
            needed,
            "the run would stop when the disk fills: free space, move "
            "cluster.fileroot, or save less often (saver.freq_steps)",
        )
    if not steps:
        return warn(
            FAMILY, name, found, needed, "the count of HF checkpoints is a guess"
        )
    return ok(FAMILY, name, found, needed)

"""Path-valued config fields, made absolute once against the directory of the command.

AReaL's workers do not all run where the command was run: Ray starts its
workers in a session folder, and a worker that opens ``outputs/model`` there
finds nothing (transformers then takes the path for a hub id). The entry
scripts therefore resolve every path-valued field once, on the controller,
against the current directory, and hand absolute paths to every process.

Two kinds of fields:

* local paths (data files, ``cluster.fileroot``, the name-resolve root, prompts
  files, eval folders): always made absolute;
* model paths (``actor.path``, ``ref.path``, ``tokenizer_path``,
  ``sglang.model_path``, ...), which may name a hub model: made absolute when
  the path exists here or cannot be a hub id (``outputs/cpu/needle_model``,
  ``./ckpt``, ``~/ckpt``); a valid hub id that is not a local folder
  (``Qwen/Qwen2.5-7B-Instruct``) is left as it is, as transformers reads it.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, TypeVar

from areal.api.cli_args import (
    ClusterSpecConfig,
    NameResolveConfig,
    SGLangConfig,
    TensorBoardConfig,
    TrainEngineConfig,
    vLLMConfig,
)
from areal.utils import logging
from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id

from memagent_workflow.infra.config_loader import parse_config
from memagent_workflow.prompts.original import is_spelling, resolve_dir

C = TypeVar("C")
logger = logging.getLogger("RunPaths")

# (config class, field): the field holds a model (a local folder or a hub id).
MODEL_FIELDS: tuple[tuple[type, str], ...] = (
    (TrainEngineConfig, "path"),  # actor, ref, critic, teacher
    (SGLangConfig, "model_path"),
    (vLLMConfig, "model"),
)
# Field names that hold a model whatever section they are in.
MODEL_NAMES = frozenset({"tokenizer_path"})
# (config class, field): always a local path.
LOCAL_FIELDS: tuple[tuple[type, str], ...] = (
    (NameResolveConfig, "nfs_record_root"),
    (TensorBoardConfig, "path"),
)
# Field names that are always local paths, whatever section they are in:
# AReaL's fileroots (cluster, rollout, saver, recover, evaluator, stats logger,
# perf tracer), the project's data and prompts files and eval folders.
LOCAL_NAMES = frozenset(
    {"fileroot", "prompts", "data_root", "ruler_data_root", "output_dir"}
)


def is_hub_id(value: str) -> bool:
    """True when ``value`` could name a model on the hub (``org/name`` or ``name``)."""
    try:
        validate_repo_id(value)
    except HFValidationError:
        return False
    return True


def resolve_model_path(value: str, cwd: Path) -> str:
    """``value`` made absolute unless it is a hub id with no local folder of that name."""
    expanded = os.path.expanduser(value)
    local = cwd / expanded
    if os.path.isabs(expanded) or local.exists() or not is_hub_id(value):
        return os.path.abspath(local)
    return value


def resolve_local_path(value: str, cwd: Path) -> str:
    """``value`` made absolute against ``cwd`` (``~`` expanded)."""
    return os.path.abspath(cwd / os.path.expanduser(value))


def _kind(obj: Any, name: str) -> str | None:
    """'model', 'local' or None for field ``name`` of config object ``obj``."""
    if name in MODEL_NAMES or any(
        isinstance(obj, cls) and name == f for cls, f in MODEL_FIELDS
    ):
        return "model"
    if name in LOCAL_NAMES or any(
        isinstance(obj, cls) and name == f for cls, f in LOCAL_FIELDS
    ):
        return "local"
    if name == "path" and type(obj).__name__.endswith("DatasetConfig"):
        return "local"  # the project reads only local data files
    return None


def resolve_paths(config: Any, cwd: str | os.PathLike | None = None) -> Any:
    """Make every path-valued field of ``config`` absolute (in place; returns it).

    ``cwd``: the directory relative paths mean (default: the current one). A
    field already absolute, empty or None is left alone; so is a model field
    holding a hub id.
    """
    base = Path(cwd or os.getcwd()).absolute()
    changed: list[str] = []
    _walk(config, "", base, changed, set())
    if changed:
        logger.info(f"relative paths resolved against {base}: {', '.join(changed)}")
    return config


def _walk(obj: Any, prefix: str, cwd: Path, changed: list[str], seen: set) -> None:
    if not dataclasses.is_dataclass(obj) or id(obj) in seen:
        return
    seen.add(id(obj))
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name, None)
        where = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(value):
            _walk(value, where + ".", cwd, changed, seen)
            continue
        kind = _kind(obj, f.name)
        if kind is None or not isinstance(value, str) or not value:
            continue
        if kind == "model":
            new = resolve_model_path(value, cwd)
        elif f.name == "prompts" and is_spelling(value):
            new = resolve_dir(value, cwd)  # memagent.prompts=original...: a key
        else:
            new = resolve_local_path(value, cwd)
        if new != value:
            setattr(obj, f.name, new)
            changed.append(f"{where}={new}")


def make_shared_folders(cluster: ClusterSpecConfig) -> list[str]:
    """Create ``cluster.fileroot`` and the nfs name-resolve root if missing.

    AReaL's schedulers and its SPMD launcher refuse to start when they do not
    exist (``areal.utils.fs.validate_shared_path``). Returns the folders made.
    """
    folders = [cluster.fileroot]
    if cluster.name_resolve.type == "nfs":
        folders.append(cluster.name_resolve.nfs_record_root)
    made = []
    for folder in folders:
        if folder and not os.path.isdir(folder):
            os.makedirs(folder, exist_ok=True)
            made.append(folder)
    if made:
        logger.info(f"created shared folder(s): {', '.join(made)}")
    return made


def load_entry_config(argv: list[str], config_cls: type[C], script: str) -> C:
    """The config of the entry script ``script`` (its path): ``--config`` and
    its overrides parsed by ``config_cls`` (a config made for another entry
    stops there, naming its command), every relative path made absolute, so
    that it means the same in every worker."""
    return resolve_paths(parse_config(argv, config_cls, script))

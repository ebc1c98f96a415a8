"""How the entry scripts load a config: ``--config`` and its overrides parsed by
AReaL's ``load_expr_config``, a CPU stand-in config refused with its command,
and every other bad config refused as one :class:`ConfigError` naming the file,
the key and the override that set it.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from memagent_workflow.data.files import utf8_problem
from memagent_workflow.data.schema import show

C = TypeVar("C")
F = TypeVar("F", bound=Callable[..., Any])
# The section only a CPU stand-in config has (standin/config.py adds it); the
# product's entry scripts refuse such a config, naming the stand-in's entry of
# the same name (standin/<script>.py, which calls the script's main).
STANDIN_SECTION = "standin"
STANDIN_PACKAGE = "standin"


class ConfigError(ValueError):
    """A config file or override that cannot be used: the file, the key (and
    the override that set it) and why. ``full_key``: the key, '' if none."""

    def __init__(self, message: str, full_key: str = ""):
        super().__init__(message)
        self.full_key = full_key


def parse_config(argv: list[str], config_cls: type[C], script: str) -> C:
    """``--config`` and its overrides parsed by ``config_cls`` (AReaL's
    ``load_expr_config``).

    A CPU stand-in config has a ``standin:`` section, which the product's
    classes lack: it stops here with one line naming the command that runs it,
    the stand-in's entry named as ``script`` (the entry script's path), with the
    same arguments. Any other problem (a missing, undecodable or unparsable
    file, an unknown key, a value of the wrong type, NaN, a check of the
    config's own) is a :class:`ConfigError`.
    """
    from areal.api.cli_args import load_expr_config
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException
    from yaml import YAMLError

    path, overrides = _config_file(argv)
    _check_overrides(path, overrides)
    try:
        config, _ = load_expr_config(argv, config_cls)
    except KeyError as exc:  # OmegaConf's ConfigKeyError: a key the class lacks
        if top_key(exc) != STANDIN_SECTION:
            raise _refusal(exc, path, overrides) from None
        entry = f"{STANDIN_PACKAGE}.{Path(script).stem}"
        args = " ".join(shlex.quote(a) for a in argv)
        raise SystemExit(
            f"{path} is a CPU stand-in config (its {STANDIN_SECTION}: section is "
            f"not {config_cls.__name__}'s): run it with "
            f"`uv run python -m {entry} {args}`"
        ) from None
    except (HydraException, OmegaConfBaseException, YAMLError, ValueError) as exc:
        raise _refusal(exc, path, overrides) from None
    if (key := _nan_key(config)) is not None:
        raise _refusal(ValueError("NaN, which no setting takes"), path, overrides, key)
    return config


def _config_file(argv: list[str]) -> tuple[str, list[str]]:
    """``--config``'s value, checked as a readable UTF-8 ``.yaml`` file, and the
    overrides (as AReaL's ``parse_cli_args`` splits them)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--config")
    args, overrides = parser.parse_known_args(
        argv[1:] if argv[:1] and argv[0].endswith(".py") else argv
    )
    if args.config is None:
        raise ConfigError("--config CONFIG.yaml is required")
    path = Path(args.config)
    why = None
    if path.is_dir():
        why = "is a directory, not a config file"
    elif not path.is_file():
        why = "no such file"
    elif path.suffix != ".yaml":
        why = "a config file's name ends in .yaml (AReaL's loader reads no other)"
    else:
        try:
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError as exc:
            why = f"cannot read it: {exc}"
        else:
            why = utf8_problem(text)
    if why is not None:
        raise ConfigError(f"config {args.config}: {why}")
    return args.config, overrides


def _check_overrides(path: str, overrides: list[str]) -> None:
    """Each override parsed alone: one that is no ``KEY=VALUE`` or sets NaN is
    refused by name before AReaL composes anything."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser = OverridesParser.create()
    for override in overrides:
        key = _override_key(override)
        where = f"config {path}: key {key!r} (set by the override {show(override)})"
        try:
            value = parser.parse_override(override).value()
        except (HydraException, ValueError) as exc:  # the grammar, int's limit
            lines = [line for line in str(exc).split("\n") if line.strip()]
            raise ConfigError(f"{where}: {' '.join(lines[:2])}", key) from None
        if _nan_key(value) is not None:
            raise ConfigError(f"{where}: NaN, which no setting takes", key)


def _refusal(
    exc: Exception, path: str, overrides: list[str], key: str | None = None
) -> ConfigError:
    """One line naming the file, the key, the override that set it, and why."""
    cause = exc.__cause__ if exc.__cause__ is not None else exc.__context__
    if key is None:
        key = getattr(exc, "full_key", None) or getattr(cause, "full_key", None) or ""
    why = _why(exc, cause)
    where = f"config {path}" + (f": key {key!r}" if key else "")
    # the override that set the key, or whose key the message names
    setter = next(
        (o for o in overrides if _override_key(o) == key)
        if key
        else (o for o in overrides if _names(why, _override_key(o))),
        None,
    )
    if setter is not None:
        where += f" (set by the override {show(setter)})"
    elif overrides and not key:
        where += f" (with the overrides {' '.join(map(show, overrides))})"
    return ConfigError(f"{where}: {why}", key)


def _why(exc: Exception, cause: BaseException | None) -> str:
    """What is wrong, in one line (a YAML error with its line in the file)."""
    from yaml import MarkedYAMLError

    marked = next(
        (e for e in (exc, cause) if isinstance(e, MarkedYAMLError) and e.problem_mark),
        None,
    )
    if marked is not None:
        why = f"line {marked.problem_mark.line + 1}: {marked.problem}"
        if marked.context and marked.context_mark:
            why += f" ({marked.context} at line {marked.context_mark.line + 1})"
        return why
    if isinstance(exc, KeyError):  # OmegaConf's merge: the class lacks the key
        owner = getattr(exc, "object_type", None)
        return "no such key" + (f" in {owner.__name__}" if owner else "")
    from omegaconf.errors import OmegaConfBaseException

    lines = str(exc).split("\n")  # OmegaConf's lines after the first: its key
    why = lines[0] if isinstance(exc, OmegaConfBaseException) else " ".join(lines)
    why = why.strip()
    return why if len(why) <= 500 else why[:497] + "..."


def _names(text: str, key: str) -> bool:
    """``text`` names ``key`` as a whole (``a.b`` in "a.b must be", not "a.bc")."""
    return re.search(rf"(?<![\w.]){re.escape(key)}(?![\w.])", text) is not None


def _override_key(override: str) -> str:
    """``a.b`` of the override ``a.b=1`` (also ``+a.b=1``, ``++a.b=1``, ``~a.b``)."""
    return override.split("=", 1)[0].lstrip("+~")


def _nan_key(obj: Any, prefix: str = "") -> str | None:
    """The first key of a config holding NaN (no field means anything by it)."""
    if isinstance(obj, float):
        return prefix if math.isnan(obj) else None
    if dataclasses.is_dataclass(obj):
        items = ((f.name, getattr(obj, f.name, None)) for f in dataclasses.fields(obj))
    elif isinstance(obj, dict):
        items = ((str(k), v) for k, v in obj.items())
    elif isinstance(obj, list | tuple):
        items = ((str(i), v) for i, v in enumerate(obj))
    else:
        return None
    for name, value in items:
        if (key := _nan_key(value, f"{prefix}.{name}" if prefix else name)) is not None:
            return key
    return None


def exits_on_config_error(main: F) -> F:
    """An entry script's ``main`` that stops on a :class:`ConfigError` with its
    message alone on stderr and exit status 2, no traceback."""

    @functools.wraps(main)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return main(*args, **kwargs)
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None

    return run  # type: ignore[return-value]


def top_key(exc: Exception) -> str:
    """The top-level config key an OmegaConf key error (its ``full_key``) is
    about; '' if none."""
    return str(getattr(exc, "full_key", "") or "").split(".", 1)[0]

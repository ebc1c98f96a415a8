"""How the entry scripts load a config: ``--config`` and its overrides parsed by
AReaL's ``load_expr_config``, a CPU stand-in config refused with its command.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TypeVar

C = TypeVar("C")
# The section only a CPU stand-in config has (standin/config.py adds it); the
# product's entry scripts refuse such a config, naming the stand-in's entry of
# the same name (standin/<script>.py, which calls the script's main).
STANDIN_SECTION = "standin"
STANDIN_PACKAGE = "standin"


def parse_config(argv: list[str], config_cls: type[C], script: str) -> C:
    """``--config`` and its overrides parsed by ``config_cls`` (AReaL's
    ``load_expr_config``).

    A CPU stand-in config has a ``standin:`` section, which the product's
    classes lack: it stops here with one line naming the command that runs it,
    the stand-in's entry named as ``script`` (the entry script's path), with the
    same arguments.
    """
    from areal.api.cli_args import load_expr_config

    try:
        config, _ = load_expr_config(argv, config_cls)
    except KeyError as exc:  # OmegaConf's ConfigKeyError: a key the class lacks
        if top_key(exc) != STANDIN_SECTION:
            raise
        entry = f"{STANDIN_PACKAGE}.{Path(script).stem}"
        args = " ".join(shlex.quote(a) for a in argv)
        pairs = zip(argv, argv[1:], strict=False)
        name = next((v for k, v in pairs if k == "--config"), "this config")
        raise SystemExit(
            f"{name} is a CPU stand-in config (its {STANDIN_SECTION}: section is "
            f"not {config_cls.__name__}'s): run it with "
            f"`uv run python -m {entry} {args}`"
        ) from None
    return config


def top_key(exc: Exception) -> str:
    """The top-level config key an OmegaConf key error (its ``full_key``) is
    about; '' if none."""
    return str(getattr(exc, "full_key", "") or "").split(".", 1)[0]

"""Which order a memory-update prompt puts the memory and the section in, and
the checkpoint's record of the order it was trained with.

``memory_first`` is the paper's (question, memory, section) and the default
everywhere; ``section_first`` (``prompts/section_first.yaml``) lets a GRPO
group's rows of one turn share instruction + question + section (AReaL's tree
training computes that prefix once). A model trained in one order reads the
other worse, silently: the trainer writes ``PROMPT_ORDER_FILE`` beside the
weights it saves, and the eval, ``ask`` and the service (`check_prompt_order`)
follow it or refuse a mismatch, naming the prompts to use.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

ORDERS = ("memory_first", "section_first")
PROMPT_ORDER_FILE = "memagent_prompt_order.json"


class PromptOrderError(ValueError):
    """Prompts in another order than the checkpoint was trained with."""


def prompt_order(memory_update: str) -> str:
    """``section_first`` if the template's ``{chunk}`` comes before ``{memory}``."""
    chunk, memory = memory_update.find("{chunk}"), memory_update.find("{memory}")
    if chunk < 0 or memory < 0:
        raise ValueError("a memory-update template needs {chunk} and {memory}")
    return "section_first" if chunk < memory else "memory_first"


def write_prompt_order(folder: str | os.PathLike, order: str, source: str) -> Path:
    """Record ``order`` (from the prompts ``source``) in a checkpoint ``folder``."""
    if order not in ORDERS:
        raise ValueError(f"prompt order must be one of {ORDERS}, got {order!r}")
    path = Path(folder) / PROMPT_ORDER_FILE
    path.write_text(json.dumps({"order": order, "prompts": source}) + "\n")
    return path


def read_prompt_order(folder: str | os.PathLike) -> dict | None:
    """The record in a model ``folder`` (None: none there, e.g. a base model)."""
    path = Path(folder) / PROMPT_ORDER_FILE
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise PromptOrderError(f"{path}: unreadable ({exc})") from None
    if not isinstance(record, dict) or record.get("order") not in ORDERS:
        raise PromptOrderError(f"{path}: expected {{'order': one of {ORDERS}}}")
    return record


def check_prompt_order(
    model: str | os.PathLike, memory_update: str, what: str = "the eval"
) -> str | None:
    """The order the checkpoint in ``model`` was trained with, if recorded;
    `PromptOrderError` if ``memory_update`` (the prompts in use) reads in the
    other one. A folder without a record (a base model, a remote name) passes."""
    if not os.path.isdir(model):
        return None
    record = read_prompt_order(model)
    if record is None:
        return None
    using = prompt_order(memory_update)
    if using != record["order"]:
        hint = (
            "memagent.prompts=prompts/section_first.yaml (or your section-first file)"
            if record["order"] == "section_first"
            else "the paper's order (memagent.prompts unset, or a memory-first file)"
        )
        raise PromptOrderError(
            f"{model} was trained with the {record['order']} prompt order (prompts "
            f"{record.get('prompts')}, {PROMPT_ORDER_FILE}), but {what} was given "
            f"{using} prompts: reading in another order loses accuracy silently. "
            f"Use {hint}."
        )
    return record["order"]

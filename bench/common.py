"""Helpers shared by the benchmarks: machine info, results files, workflow setup."""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
RESULTS_DIR = Path(__file__).resolve().parent / "results"
QUESTION = "Who built the river in Paris?"
ANSWERS = ["Maria Smith"]


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on."""
    import areal
    import tokenizers
    import torch
    import transformers

    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpu_cores": os.cpu_count(),
        "cpu": _cpu_model(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "areal": getattr(areal, "__version__", "unknown"),
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def write_result(out_dir: Path, name: str, result: dict[str, Any]) -> Path:
    """Write ``<out_dir>/<name>.json`` atomically, with machine info added."""
    out_dir.mkdir(parents=True, exist_ok=True)
    result = {"benchmark": name, "machine": machine_info(), **result}
    path = out_dir / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(path)
    return path


def run_async(coro: Awaitable[T]) -> T:
    """``asyncio.run`` on uvloop (AReaL's loop), returning the coroutine's value.

    The value is passed out through a holder: Python 3.11's ``asyncio.run``
    formats the main task (result included) when it restores the SIGINT
    handler, which for an episode holding its turns costs seconds of repr.
    """
    import uvloop

    holder: list[T] = []

    async def main() -> None:
        holder.append(await coro)

    uvloop.run(main())
    return holder[0]


def make_workflow(tokenizer, **kw: Any):
    """A ``MemAgentWorkflow`` with the paper's budgets unless overridden."""
    from areal.api.cli_args import GenerationHyperparameters

    from memagent_workflow.workflow import MemAgentWorkflow

    args: dict[str, Any] = dict(
        gconfig=GenerationHyperparameters(max_tokens=8192),
        tokenizer=tokenizer,
        chunk_tokens=5000,
        max_memory_tokens=1024,
        max_final_tokens=512,
        group_size=1,
    )
    args.update(kw)
    return MemAgentWorkflow(**args)


def item(item_id: str, context: str) -> dict[str, Any]:
    return {"id": item_id, "question": QUESTION, "context": context, "answers": ANSWERS}

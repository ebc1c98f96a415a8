"""Helpers shared by the benchmarks: machine info, results files, workflow setup."""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
import time
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


class MachineLoad:
    """How busy the machine was while a benchmark ran, and how much of it was us.

    The machine may be shared: the 1-minute load average before, the whole
    machine's CPU use over the run (all cores, as a share of one core times
    the cores) and this process's own CPU (children included) over the run.
    """

    def __init__(self):
        import psutil

        self.loadavg = os.getloadavg()
        psutil.cpu_percent(interval=None)  # starts the system-wide interval
        self.t0 = time.perf_counter()
        self.cpu0 = _own_cpu_s()

    def done(self, other_own_cpu_s: float = 0.0) -> dict[str, Any]:
        """The load figures; ``other_own_cpu_s``: CPU of the benchmark's
        processes that are not this one's reaped children."""
        import psutil

        wall = time.perf_counter() - self.t0
        own = _own_cpu_s() - self.cpu0 + other_own_cpu_s
        busy = psutil.cpu_percent(interval=None) / 100  # share of all cores
        cores = os.cpu_count() or 1
        return {
            "bench_wall_s": wall,
            "loadavg_before": list(self.loadavg),
            "loadavg_after": list(os.getloadavg()),
            "machine_busy": busy,
            "own_cpu_s": own,
            "others_busy_cores": max(0.0, busy * cores - own / wall),
        }


def _own_cpu_s() -> float:
    import resource

    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def write_result(out_dir: Path, name: str, result: dict[str, Any]) -> Path:
    """Write ``<out_dir>/<name>.json`` atomically, with machine info added."""
    from memagent_workflow.data.files import atomic_write

    result = {"benchmark": name, "machine": machine_info(), **result}
    path = out_dir / f"{name}.json"
    text = json.dumps(result, indent=2) + "\n"
    atomic_write(path, lambda tmp: tmp.write_text(text))
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

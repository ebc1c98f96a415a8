"""After a CPU training run: its checkpoint at several lengths, through ``eval.py``.

The CPU job (``standin.cpu_job``) calls ``run_length_eval`` when
``standin.length_eval`` lists lengths (chunks per document). Each row is one run
of the real eval entrypoint with the stand-in, ``python -m standin.eval --config
standin.length_eval_config`` (``examples/eval.py``'s main), on held-out needle
questions: the trained model
(the run's last HF checkpoint) and the warm start it began from (``actor.path``).
The rows are combined by ``memagent_workflow.eval.length_table`` into
``length_table.{json,md,png}`` beside ``steps.jsonl``, with each run's caught /
kept / answered split per length (its memory traces, ``eval.trace``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from areal.utils import logging
from areal.utils.saver import Saver
from areal.utils.stats_logger import StatsLogger

from memagent_workflow.eval.length_table import table_markdown, write_length_table
from standin.config import StandinGRPOConfig
from standin.lora import is_adapter, merge_adapter

logger = logging.getLogger("StandinLengthEval")

REPO = Path(__file__).resolve().parent.parent
EVAL_ENTRY = "standin.eval"  # examples/eval.py with the stand-in's inference
_STEP = re.compile(r"globalstep(\d+)$")


def last_checkpoint(config: StandinGRPOConfig) -> Path:
    """The HF checkpoint of the run's last saved step."""
    s = config.saver
    root = Path(Saver.get_model_save_root(s.experiment_name, s.trial_name, s.fileroot))
    saved = [
        (int(m.group(1)), p) for p in root.iterdir() if (m := _STEP.search(p.name))
    ]
    if not saved:
        raise FileNotFoundError(f"no HF checkpoint under {root} (saver.freq_steps?)")
    return max(saved)[1]


def eval_overrides(config: StandinGRPOConfig) -> list[str]:
    """The eval config's keys that must be the training run's: how a turn reads."""
    mem, cfg = config.memagent, config.standin
    return [
        f"memagent.chunk_tokens={mem.chunk_tokens}",
        f"memagent.max_memory_tokens={mem.max_memory_tokens}",
        f"memagent.max_final_tokens={mem.max_final_tokens}",
        f"memagent.initial_memory={mem.initial_memory}",
        f"memagent.prompts={mem.prompts}",
        f"standin.task={cfg.task}",
        f"standin.seed={cfg.seed}",
        f"standin.needle_distractors={cfg.needle_distractors}",
        f"standin.synthetic_eval={cfg.synthetic_valid}",
        f"gconfig.max_tokens={config.gconfig.max_tokens}",
        f"rollout.backend={config.rollout.backend}",  # the engine trained with
    ]


def run_eval(argv: list[str], log_file: Path) -> None:
    """One run of the stand-in's eval entry (its own process, as a user would
    run it), importing this repository's code from any working directory."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", EVAL_ENTRY, *argv]
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    with open(log_file, "w") as log:
        proc = subprocess.run(
            cmd, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": path},
        )  # fmt: skip
    if proc.returncode != 0:
        tail = log_file.read_text()[-2000:]
        raise RuntimeError(f"length eval failed (rc {proc.returncode}):\n{tail}")


def run_length_eval(config: StandinGRPOConfig) -> dict[str, Any]:
    """Trained and warm-start rows at ``standin.length_eval`` chunks; the table."""
    cfg = config.standin
    folder = Path(StatsLogger.get_log_path(config.stats_logger))
    work = folder / "length_eval"
    lengths = "[" + ",".join(str(n) for n in cfg.length_eval) + "]"
    trained = last_checkpoint(config)
    if is_adapter(trained):  # actor.use_lora: served merged into the warm start
        trained = merge_adapter(trained, Path(config.actor.path), work / "merged")
    rows = {"trained": (trained, []), "warm_start": (Path(config.actor.path), [])}
    if cfg.length_eval_wiped:
        rows["memory_wiped"] = (trained, ["memagent.wipe_memory=true"])
    outputs = {}
    for label, (model, extra) in rows.items():
        out = work / label
        logger.info(f"length eval, {label} ({model}) at {lengths} chunks ...")
        run_eval(
            [
                "--config",
                cfg.length_eval_config,
                f"actor.path={model}",
                f"eval.output_dir={out}",
                f"eval.data_root={work / 'data'}",
                f"eval.lengths={lengths}",
                "eval.resume=false",
                f"cluster.fileroot={work / 'areal'}",
                f"cluster.name_resolve.nfs_record_root={work / 'name_resolve'}",
                *eval_overrides(config),
                *extra,
            ],  # fmt: skip
            work / f"{label}.log",
        )
        outputs[label] = out
    table = write_length_table(
        folder,
        outputs,
        chance=cfg.chance,
        title=f"Needle task, trained at {cfg.needle_chunks} chunks",
        train_chunks=cfg.needle_chunks,
    )
    logger.info(
        f"accuracy per length (chunks; trained at {cfg.needle_chunks}), "
        f"{folder / 'length_table.json'}:\n" + table_markdown(table, cfg.chance)
    )
    return table

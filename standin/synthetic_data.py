"""The CPU job's synthetic training and held-out questions, written once per spec.

A data file is reused when it exists (a run's own files, or the user's). The
questions the stand-in writes depend on the task, its options and the seed; a
file written for other options would train or validate on the wrong task
without a word, so each written file gets a sidecar (``<file>.spec.json``) and a
run whose options differ from it is refused, naming the file and the keys. A
file without a sidecar (the user's own) is used as it is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from areal.utils import logging

from memagent_workflow.data.files import write_json, write_jsonl
from memagent_workflow.data.synthetic import make_needle, make_synthetic
from standin.config import StandinConfig

logger = logging.getLogger("StandinData")


SPLITS = {  # split: the key of its question count, its seed's offset
    "train": ("standin.synthetic_train", 0),
    "valid": ("standin.synthetic_valid", 1),  # held out: the seed after standin.seed
}


def spec_of(cfg: StandinConfig, split: str) -> dict[str, Any]:
    """What the questions depend on, by the config key that sets each."""
    count = SPLITS[split][0]
    n = cfg.synthetic_train if split == "train" else cfg.synthetic_valid
    spec = {"standin.task": cfg.task, count: n, "standin.seed": cfg.seed}
    if cfg.task == "needle":
        spec["standin.needle_chunks"] = cfg.needle_chunks
        spec["standin.needle_distractors"] = cfg.needle_distractors
    else:
        spec["standin.synthetic_docs"] = cfg.synthetic_docs
    return spec


def sidecar(path: str | Path) -> Path:
    return Path(f"{path}.spec.json")


def ensure_synthetic(path: str, cfg: StandinConfig, split: str) -> None:
    """Write ``split``'s synthetic questions of ``cfg.task`` to ``path`` unless it
    exists; refuse an existing file the stand-in wrote for other options."""
    spec = spec_of(cfg, split)
    if Path(path).exists():
        check_spec(path, spec)
        logger.info(f"using existing data {path}")
        return
    count, offset = SPLITS[split]
    n, seed = spec[count], cfg.seed + offset
    if cfg.task == "needle":
        rows = make_needle(
            n, seed, cfg.needle_chunks, cfg.needle_distractors, split=split
        )
    else:
        rows = make_synthetic(n, seed=seed, num_docs=cfg.synthetic_docs)
    write_jsonl(path, rows)
    write_json(sidecar(path), spec)
    logger.info(f"wrote {n} synthetic {cfg.task} questions to {path}")


def check_spec(path: str, spec: dict[str, Any]) -> None:
    meta = sidecar(path)
    if not meta.is_file():
        return
    written = json.loads(meta.read_text(encoding="utf-8"))
    differ = [k for k in spec if written.get(k) != spec[k]]
    if differ:
        was = ", ".join(f"{k}={written.get(k)!r}" for k in differ)
        now = ", ".join(f"{k}={spec[k]!r}" for k in differ)
        raise ValueError(
            f"{path}: its synthetic questions were written with {was} ({meta}); "
            f"this run asks {now}. Delete the file (the run writes it anew) or "
            "point the dataset's path at another file."
        )

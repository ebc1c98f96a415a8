"""Before an eval run: check the inputs and the output folder, refuse what is unsafe.

Everything here happens before the first request: a missing or malformed eval
file, a chunk cap that would cut a document, or an output folder holding
results of another model or protocol stops the run with ``EvalRefused``.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from areal.utils import logging

from memagent_workflow.eval import results, sets
from memagent_workflow.eval.config import MemAgentEvalConfig

logger = logging.getLogger("MemAgentEval")

RUN_CONFIG = "run_config.json"


class EvalRefused(RuntimeError):
    """A run that would silently change the protocol or mix results (exit 2)."""


# ------------------------------------------------------------------ checks


def run_config(config: MemAgentEvalConfig) -> dict[str, Any]:
    """What must not change between a run and its resumption."""
    g = config.gconfig
    return {
        "model": config.actor.path,
        "tokenizer": config.tokenizer_path,
        "memagent": {
            k: v
            for k, v in asdict(config.memagent).items()
            # training-only keys, and how long a failed call is retried
            if k
            not in ("group_size", "adv_std_norm", "train_final_turn", "engine_retry_s")
        },
        "sampling": {
            "temperature": g.temperature,
            "top_p": g.top_p,
            "greedy": g.greedy,
        },
    }


def prepare_output(config: MemAgentEvalConfig) -> Path:
    """Create ``output_dir``; refuse to resume into results of another setup."""
    out = Path(config.eval.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / RUN_CONFIG
    current = run_config(config)
    if config.eval.resume and path.is_file():
        previous = json.loads(path.read_text(encoding="utf-8"))
        if previous != current and results.present_lengths(out):
            raise EvalRefused(
                f"{out} holds results of a different setup ({path}: {previous}; now: "
                f"{current}). Use another eval.output_dir, or eval.resume=false to "
                "move the old results aside."
            )
    if not config.eval.resume:  # a fresh start: nothing old is mixed in
        old = [results.results_path(out, n) for n in results.present_lengths(out)]
        for f in [*old, out / results.TIMING_FILE]:
            if f.exists():
                shutil.move(f, f.with_name(f.name + ".bak"))
                logger.warning(f"eval.resume=false: moved {f} to {f.name}.bak")
    results.write_json_atomic(path, current)
    return out


def scan_lengths(config: MemAgentEvalConfig) -> dict[int, dict[str, list[str]]]:
    """Validate every eval file before anything runs; ``{N: {id: answers}}``.

    With ``memagent.max_chunks`` set, a sample that would need more chunks is
    refused here: evaluation never cuts a document.
    """
    ev, mem = config.eval, config.memagent
    missing = [n for n in ev.lengths if not sets.eval_file(ev.data_root, n).is_file()]
    if missing:
        raise EvalRefused(
            f"no eval file for N={missing} under {ev.data_root} "
            "(examples/prepare_eval_data.py downloads or builds them)"
        )
    cap = None if mem.max_chunks is None else mem.max_chunks * mem.chunk_tokens
    tokenizer = None
    out: dict[int, dict[str, list[str]]] = {}
    for n in ev.lengths:
        path = sets.eval_file(ev.data_root, n)
        try:
            samples = {}
            for s in sets.iter_eval_file(path):
                samples[s["id"]] = s["answers"]
                # A context of at most `cap` UTF-8 bytes has at most `cap` tokens.
                if cap is None or len(s["context"].encode("utf-8")) <= cap:
                    continue
                if tokenizer is None:
                    from memagent_workflow.workflow import load_tokenizer

                    tokenizer = load_tokenizer(config.tokenizer_path)
                from memagent_workflow.context import encode_context

                tokens = len(encode_context(tokenizer, s["context"]))
                if tokens > cap:
                    raise EvalRefused(
                        f"{path}: sample {s['id']!r} has {tokens} context tokens, "
                        f"{-(-tokens // mem.chunk_tokens)} chunks of "
                        f"{mem.chunk_tokens}, more than memagent.max_chunks="
                        f"{mem.max_chunks}. Evaluation never cuts a document: set "
                        "memagent.max_chunks=null (the original protocol)."
                    )
        except sets.EvalDataError as exc:
            raise EvalRefused(str(exc)) from exc
        out[n] = samples
    return out

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

from memagent_workflow.chunking import cut_refusal
from memagent_workflow.data.files import write_json
from memagent_workflow.eval import results, sets, targets
from memagent_workflow.eval.benchmarks import RULER_HQA, Benchmark
from memagent_workflow.eval.config import PAPER, MemAgentEvalConfig
from memagent_workflow.eval.targets import Target
from memagent_workflow.eval.trace import trace_file
from memagent_workflow.prompts import load_prompts
from memagent_workflow.prompts.order import check_prompt_order

logger = logging.getLogger("MemAgentEval")

RUN_CONFIG = "run_config.json"


class EvalRefused(RuntimeError):
    """A run that would silently change the protocol or mix results (exit 2)."""


# ------------------------------------------------------------------ checks


# memagent fields that do not change what an eval run measures.
_TRAIN_ONLY = (
    "group_size",
    "adv_std_norm",
    "train_final_turn",
    "reward",
    "engine_retry_s",  # a retry policy, not part of a resumable setup
)


def run_config(config: MemAgentEvalConfig) -> dict[str, Any]:
    """What must not change between a run and its resumption.

    The prompts enter by their text, not their file name.
    """
    g = config.gconfig
    memagent = {
        k: v for k, v in asdict(config.memagent).items() if k not in _TRAIN_ONLY
    }
    prompts = load_prompts(memagent.pop("prompts"))
    if prompts.source != "built-in":
        memagent["prompts"] = {
            "memory_update": prompts.memory_update,
            "final_answer": prompts.final_answer,
        }
    return {
        "model": config.actor.path,
        "tokenizer": config.tokenizer_path,
        "memagent": memagent,
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
        if previous != current and targets.present(out):
            raise EvalRefused(
                f"{out} holds results of a different setup ({path}: {previous}; now: "
                f"{current}). Use another eval.output_dir, or eval.resume=false to "
                "move the old results aside."
            )
    if not config.eval.resume:  # a fresh start: nothing old is mixed in
        old = [
            f
            for t in targets.present(out)
            for f in (t.results_file(out), trace_file(t.results_file(out)))
        ]
        for f in [*old, out / results.TIMING_FILE]:
            if f.exists():
                shutil.move(f, f.with_name(f.name + ".bak"))
                logger.warning(f"eval.resume=false: moved {f} to {f.name}.bak")
    write_json(path, current)
    return out


def check_preset(config: MemAgentEvalConfig) -> None:
    """Refuse ``eval.preset=paper`` where the run would not be the paper's protocol.

    The preset sets the answer protocol, the lengths and the headline itself
    (``MemAgentEvalConfig``), the original's prompts too (``memagent.prompts:
    original`` unless a file is given); sampling other than the paper's is
    refused here.
    """
    if config.eval.preset != "paper":
        return
    g = config.gconfig
    want = {"temperature": PAPER["temperature"], "top_p": PAPER["top_p"]}
    got = {"temperature": g.temperature, "top_p": g.top_p}
    if g.greedy or got != want:
        raise EvalRefused(
            f"eval.preset=paper samples as the paper did (gconfig.greedy=false, "
            f"{want}); this config has greedy={g.greedy}, {got}. Drop the sampling "
            "overrides or the preset."
        )


def check_official_questions(
    config: MemAgentEvalConfig,
    ids: dict[int, dict[str, list[str]]],
    kinds: dict[int, str | None],
) -> None:
    """Under ``eval.preset=paper``: every length must be an official set (not one
    built here) asking the same questions (the official question indices)."""
    if config.eval.preset != "paper":
        return
    built = sorted(n for n, kind in kinds.items() if kind == sets.BUILT_SET)
    if built:
        raise EvalRefused(
            f"eval.preset=paper: N={built} are {sets.BUILT_SET} sets built here, "
            "not the official ones; fetch the official files "
            "(examples/prepare_eval_data.py --download) or drop the preset"
        )
    lengths = list(ids)
    first = set(ids[lengths[0]])
    for n in lengths[1:]:
        if set(ids[n]) != first:
            raise EvalRefused(
                f"eval.preset=paper: eval_{n}.json does not ask the questions of "
                f"eval_{lengths[0]}.json (ids differ: "
                f"{sorted(set(ids[n]) ^ first)[:5]} ...); the official sets share "
                "their question indices"
            )


def check_workflow(config: MemAgentEvalConfig) -> dict[str, Any]:
    """The eval workflow's kwargs, after building it once: a bad prompts file or
    token budget stops the run here, before any server starts."""
    from memagent_workflow.config import workflow_kwargs
    from memagent_workflow.eval.baseline import workflow_for

    mode = config.eval.mode
    extra = {"trace": config.eval.trace} if mode == "memagent" else {"mode": mode}
    try:
        kwargs = workflow_kwargs(config, gconfig=config.gconfig, **extra)
        workflow_for(mode)[0](**kwargs)
        # a checkpoint trained in the other prompt order reads this one worse
        check_prompt_order(config.actor.path, kwargs["prompts"]["memory_update"])
    except ValueError as exc:  # PromptFileError included
        raise EvalRefused(str(exc)) from exc
    return kwargs


def scan_lengths(
    config: MemAgentEvalConfig,
) -> tuple[dict[int, dict[str, list[str]]], dict[int, str | None]]:
    """``scan_targets`` for the RULER-HQA lengths of the config, keyed by N."""
    plan = [Target(RULER_HQA, int(n), config.eval.mode) for n in config.eval.lengths]
    ids, kinds = scan_targets(config, plan)
    return {t.length: ids[t] for t in plan}, {t.length: kinds[t] for t in plan}


def scan_targets(
    config: MemAgentEvalConfig, plan: list[Target]
) -> tuple[dict[Target, dict[str, list[str]]], dict[Target, str | None]]:
    """Validate every eval file before anything runs.

    Returns ``{target: {id: answers}}`` and ``{target: set}``: the samples'
    ``set`` marker (``RULER-HQA-style`` for a set built by
    ``prepare_eval_data.py --build``, ``RULER`` for a RULER task file), or None
    for an unmarked file (an official one, or any other). With
    ``memagent.max_chunks`` set, a MemAgent-mode sample that would need more
    chunks is refused here: evaluation never cuts a document.
    """
    ev, mem = config.eval, config.memagent
    missing: dict[Benchmark, list[int]] = {}
    for t in plan:
        if not t.data_file(ev).is_file():
            missing.setdefault(t.benchmark, []).append(t.length)
    if missing:
        raise EvalRefused(
            "; ".join(
                f"no eval file for {b.label} {b.symbol}={lengths} under "
                f"{b.data_root(ev)} (examples/prepare_eval_data.py {b.prepare})"
                for b, lengths in missing.items()
            )
        )
    cap = None if mem.max_chunks is None else mem.max_chunks * mem.chunk_tokens
    if ev.mode != "memagent":
        cap = None  # baselines read the context in one turn (cut to the window)
    tokenizer = None
    out: dict[Target, dict[str, list[str]]] = {}
    kinds: dict[Target, str | None] = {}
    for t in plan:
        path = t.data_file(ev)
        try:
            samples = {}
            marks: set[str | None] = set()
            for s in sets.iter_eval_file(path):
                samples[s["id"]] = s["answers"]
                marks.add(s["set"])
                # A context of at most `cap` UTF-8 bytes has at most `cap` tokens.
                if cap is None or len(s["context"].encode("utf-8")) <= cap:
                    continue
                if tokenizer is None:
                    from memagent_workflow.workflow import load_tokenizer

                    tokenizer = load_tokenizer(config.tokenizer_path)
                from memagent_workflow.context import encode_context

                tokens = len(encode_context(tokenizer, s["context"]))
                why = cut_refusal(tokens, mem.chunk_tokens, mem.max_chunks)
                if why:
                    raise EvalRefused(f"{path}: sample {s['id']!r}: {why}")
        except sets.EvalDataError as exc:
            raise EvalRefused(str(exc)) from exc
        out[t] = samples
        named = sorted(m for m in marks if m)
        kinds[t] = (
            sets.BUILT_SET if sets.BUILT_SET in named else next(iter(named), None)
        )
    return out, kinds

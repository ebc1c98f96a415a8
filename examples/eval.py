"""RULER-HQA evaluation of a MemAgent model, one episode per question, resumable.

AReaL launches SGLang (single controller; the model is ``actor.path``):
    python3 examples/eval.py --config config_eval.yaml scheduler.type=local \\
        rollout.backend=sglang:d1 actor.path=Qwen/Qwen2.5-7B-Instruct
Servers already running (one ``host:port`` per server):
    AREAL_LLM_SERVER_ADDRS=10.0.0.1:30000,10.0.0.2:30000 \\
        python3 examples/eval.py --config config_eval.yaml actor.path=CKPT_DIR
Without a GPU: docs/eval.md (its CPU smoke run).

Writes ``length_{N}.jsonl`` (one line per finished sample, appended and fsync'ed),
``length_{N}.trace.jsonl`` (``eval.trace``: the memory turn by turn, written
before the sample's result line), ``timing.jsonl``, ``summary.json``, ``results.md`` and ``accuracy.png`` under
``eval.output_dir``. A rerun skips scored samples and retries failed ones.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from areal.utils import logging
from tqdm import tqdm

from memagent_workflow.eval import (
    results,
    sets,
    summary,
    targets,
    trace,
    trace_page,
)
from memagent_workflow.eval.baseline import workflow_for
from memagent_workflow.eval.checks import (
    EvalRefused,
    check_official_questions,
    check_preset,
    check_workflow,
    prepare_output,
    scan_targets,
)
from memagent_workflow.eval.config import MemAgentEvalConfig
from memagent_workflow.eval.engine import ClusterInference, open_engine
from memagent_workflow.eval.targets import Target
from memagent_workflow.infra.config_loader import exits_on_config_error
from memagent_workflow.infra.paths import load_entry_config, make_shared_folders

logger = logging.getLogger("MemAgentEval")


# ------------------------------------------------------------------ the run


def run_length(
    engine: Any,
    config: MemAgentEvalConfig,
    target: Target,
    answers: dict[str, list[str]],
    kwargs: dict[str, Any],
) -> None:
    """Evaluate every not-yet-scored sample ``(id, repeat)`` of one eval file in
    the run's mode, writing each as it finishes.

    One pass, no retries here: model calls retry for ``memagent.engine_retry_s``;
    a sample that still fails, or that the engine drops, is recorded with its
    error, and a rerun retries it."""
    ev, n = config.eval, target.length
    out_path = target.results_file(ev.output_dir)
    done = results.scored_ids(results.read_records(out_path))
    wanted = [(i, k) for k in range(ev.n_samples) for i in answers]
    todo = {key for key in wanted if key not in done}
    bar = tqdm(
        total=len(wanted),
        initial=len(wanted) - len(todo),
        desc=target.name,
        unit="sample",
        file=sys.stderr,
        dynamic_ncols=True,
    )
    start, tokens, written, failed = time.perf_counter(), 0, 0, 0
    traced = ev.trace and ev.mode == "memagent"
    with (
        results.ResultWriter(out_path) as writer,
        trace.TraceWriter(trace.trace_file(out_path) if traced else None) as tracer,
    ):
        if todo:
            path, workflow = target.data_file(ev), workflow_for(ev.mode)[1]
            for rec in stream(engine, path, todo, kwargs, ev.concurrency, workflow):
                lines = rec.pop("trace", None)
                rec = target.finish(rec)
                tracer.write(rec, lines)  # first: a scored sample has its trace
                writer.write(rec)
                todo.discard(results.sample_key(rec))
                tokens, written = tokens + rec["output_tokens"], written + 1
                failed += rec["error"] is not None
                bar.update(1)
                bar.set_postfix(failed=failed, refresh=False)
        if todo:
            logger.warning(
                f"{target.name}: {len(todo)} sample(s) got no result from the "
                "engine; recorded as failed (a rerun retries them)"
            )
        for sid, k in sorted(todo):  # the engine never answered: record why
            writer.write(
                target.finish(
                    results.make_record(
                        sid,
                        answers[sid],
                        None,
                        protocol=config.memagent.answer_protocol,
                        repeat=k,
                        error="no result from the inference engine (rejected "
                        "or timed out)",
                    )
                )
            )
    bar.close()
    if written:
        results.append_timing(
            ev.output_dir,
            n,
            time.perf_counter() - start,
            written,
            tokens,
            **target.timing_keys,
        )


def stream(
    engine: Any,
    path: Path,
    want: set[results.SampleKey],
    kwargs: dict[str, Any],
    concurrency: int,
    workflow: str,
) -> Iterator[dict[str, Any]]:
    """Records of the samples ``want`` (``(id, repeat)``) of ``path``,
    ``concurrency`` in flight at once; the repeats of a question go out together.

    The file is read lazily, so only the samples in flight are held in memory.
    A None from the engine (a task it dropped) is not attributable; its sample
    is simply not yielded, and the caller records what is left as failed.
    """
    repeats = sorted({k for _, k in want})
    samples = (
        {**s, "repeat": k}
        for s in sets.iter_eval_file(path)
        for k in repeats
        if (s["id"], k) in want
    )
    running = 0
    pending: set[results.SampleKey] = set()
    exhausted = False
    while True:
        while not exhausted and running < concurrency:
            sample = next(samples, None)
            if sample is None:
                exhausted = True
                break
            engine.submit(sample, workflow=workflow, workflow_kwargs=kwargs)
            pending.add((sample["id"], sample["repeat"]))
            running += 1
        if running == 0:
            return
        for rec in engine.wait(count=1, timeout=5.0, raise_timeout=False):
            running -= 1
            ok = isinstance(rec, dict) and "id" in rec
            key = results.sample_key(rec) if ok else None
            if key is None or key not in pending:
                logger.warning(f"dropped result from the engine: {rec!r:.200}")
                continue
            pending.discard(key)
            yield rec


def load_config(
    argv: list[str], config_cls: type[MemAgentEvalConfig] = MemAgentEvalConfig
) -> MemAgentEvalConfig:
    """``--config`` and its overrides (`load_entry_config`); a config for
    another entry stops here, naming that entry's command."""
    return load_entry_config(argv, config_cls, __file__)


@exits_on_config_error
def main(
    argv: list[str],
    *,
    config_cls: type[MemAgentEvalConfig] = MemAgentEvalConfig,
    inference_cls: type[ClusterInference] = ClusterInference,
) -> None:
    """Load the config with ``config_cls`` and evaluate with ``inference_cls``
    (a GPU cluster by default)."""
    config = load_config(argv, config_cls)
    make_shared_folders(config.cluster)  # AReaL's schedulers require them
    try:
        evaluate(config, inference_cls)
    except EvalRefused as exc:
        logger.error(str(exc))
        sys.exit(2)


def evaluate(
    config: MemAgentEvalConfig,
    inference_cls: type[ClusterInference] = ClusterInference,
) -> None:
    """Every configured length, then summary.json, results.md and accuracy.png;
    ``inference_cls`` provides the model, data and servers (a GPU cluster)."""
    check_preset(config)
    logger.info(
        f"config {type(config).__name__}, inference "
        f"{inference_cls.__module__}.{inference_cls.__qualname__}"
    )
    inference = inference_cls(config)
    inference.prepare()
    kwargs = check_workflow(config)
    plan = targets.planned(config.eval)
    ids, kinds = scan_targets(config, plan)
    official = [t for t in plan if t.benchmark.official]
    check_official_questions(
        config,
        {t.length: ids[t] for t in official},
        {t.length: kinds[t] for t in official},
    )
    out = prepare_output(config)
    repeats = range(config.eval.n_samples)
    todo = [
        t
        for t in plan
        if {(i, k) for i in ids[t] for k in repeats}
        - results.scored_ids(results.read_records(t.results_file(out)))
    ]
    if todo:
        with open_engine(config, inference) as engine:
            for t in todo:
                run_length(engine, config, t, ids[t], kwargs)
                summary.write_summary(config, ids, kinds)
    else:
        logger.info("every sample is already scored; rewriting the summary only")
    done = summary.write_summary(config, ids, kinds)
    for row in done["ruler"]:
        logger.info(
            f"{row['task']} L={row['length']} [{row['mode']}]: n={row['n']} "
            f"failed={row['failures']} {row['metric']}={row['score']}"
        )
    for row in done["lengths"]:
        logger.info(
            f"N={row['length']} [{row['mode']}]: n={row['n']} failed={row['failures']} "
            f"empty={row['empty']} "
            + " ".join(f"{k}={row[k]}" for k in ("sub_em", "em", "f1"))
            + f" | over non-failed: sub_em={row['sub_em_non_failed']}"
            + f" | best of {row['repeats']}: sub_em={row['sub_em_best']}"
        )
    if trace_page.has_traces(config.eval.output_dir):
        page = trace_page.write_page(config.eval.output_dir)
        logger.info(f"memory traces in {page} (examples/view_trace.py rewrites it)")
    logger.info(f"results in {config.eval.output_dir}/results.md")


if __name__ == "__main__":
    main(sys.argv[1:])

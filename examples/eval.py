"""RULER-HQA evaluation of a MemAgent model, one episode per question, resumable.

AReaL launches SGLang (single controller; the model is ``actor.path``):
    python3 examples/eval.py --config config_eval.yaml scheduler.type=local \\
        rollout.backend=sglang:d1 actor.path=Qwen/Qwen2.5-7B-Instruct
Servers already running (one ``host:port`` per server):
    AREAL_LLM_SERVER_ADDRS=10.0.0.1:30000,10.0.0.2:30000 \\
        python3 examples/eval.py --config config_eval.yaml actor.path=CKPT_DIR
CPU stand-in with a tiny random model (a smoke run, not a result):
    uv run python examples/eval.py --config config_eval_cpu.yaml \\
        eval.data_root=DIR eval.lengths=[50] eval.output_dir=OUT

Writes ``length_{N}.jsonl`` (one line per finished sample, appended and fsync'ed),
``timing.jsonl``, ``summary.json``, ``results.md`` and ``accuracy.png`` under
``eval.output_dir``. A rerun skips scored samples and retries failed ones.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from areal.utils import logging
from tqdm import tqdm

from memagent_workflow.config import load_run_config
from memagent_workflow.data.files import write_json
from memagent_workflow.eval import report, results, sets
from memagent_workflow.eval.checks import (
    EvalRefused,
    check_workflow,
    prepare_output,
    scan_lengths,
)
from memagent_workflow.eval.config import MemAgentEvalConfig
from memagent_workflow.paths import make_shared_folders, resolve_paths
from memagent_workflow.prompt_file import load_prompts
from memagent_workflow.ray_cluster import ray_for

logger = logging.getLogger("MemAgentEval")

WORKFLOW = "memagent_workflow.eval.workflow.MemAgentEvalWorkflow"


# ------------------------------------------------------------------ engines


@contextlib.contextmanager
def open_engine(config: MemAgentEvalConfig) -> Iterator[Any]:
    """SGLang launched by AReaL, running servers, or the CPU stand-in.

    Running servers are found in ``AREAL_LLM_SERVER_ADDRS`` or, failing that,
    where AReaL's launcher registers them (name_resolve, under
    ``rollout.experiment_name/trial_name``).
    """
    from areal.engine import RemoteSGLangEngine

    ev, rollout = config.eval, config.rollout
    rollout.max_head_offpolicyness = int(1e12)  # weights never change here
    rollout.max_concurrent_rollouts = ev.concurrency
    rollout.consumer_batch_size = ev.concurrency
    rollout.check_trajectory_format = False  # the workflow returns plain records
    with contextlib.ExitStack() as stack:
        if config.scheduler.type is not None:
            if hasattr(config, "standin"):  # what a cluster provides: model, Ray
                from standin.cpu_job import single_controller

                stack.enter_context(single_controller(config))
            stack.enter_context(ray_for(config.scheduler.type))
            engine = launch_sglang(config)
        else:
            addrs = [
                a for a in os.environ.get("AREAL_LLM_SERVER_ADDRS", "").split(",") if a
            ]
            if hasattr(config, "standin"):
                from standin.cpu_job import standin_server

                log_file = Path(config.eval.output_dir) / "standin_server.log"
                addrs = [stack.enter_context(standin_server(config, log_file))]
            engine = RemoteSGLangEngine(rollout)
            try:  # without addresses: servers registered under rollout.experiment/trial
                engine.initialize(addr=addrs or None, train_data_parallel_size=1)
            except RuntimeError as exc:
                raise EvalRefused(
                    f"{exc} Set scheduler.type=local (AReaL launches SGLang), "
                    "AREAL_LLM_SERVER_ADDRS=host:port[,...] for running servers, or "
                    "a standin: section (CPU stand-in, see config_eval_cpu.yaml)."
                ) from exc
        stack.callback(engine.destroy)
        yield engine


def launch_sglang(config: MemAgentEvalConfig) -> Any:
    """Single controller: AReaL's scheduler starts SGLang serving ``actor.path``.

    A CPU run (a ``standin:`` section) launches the stand-in the same way.
    """
    from areal.api.alloc_mode import ModelAllocation
    from areal.api.cli_args import SGLangConfig
    from areal.engine import RemoteSGLangEngine
    from areal.infra import LocalScheduler, RayScheduler, SlurmScheduler

    kinds = {"local": LocalScheduler, "ray": RayScheduler, "slurm": SlurmScheduler}
    if config.scheduler.type not in kinds:
        raise EvalRefused(f"unknown scheduler.type {config.scheduler.type!r}")
    alloc = ModelAllocation.from_str(config.rollout.backend, name="rollout")
    if alloc.backend != "sglang":
        raise EvalRefused(
            f"rollout.backend must be sglang:dN, got {config.rollout.backend}"
        )
    kwargs = {}
    if hasattr(config, "standin"):  # a loaded 2-core machine starts workers slowly
        kwargs["startup_timeout"] = config.standin.startup_timeout
    scheduler = kinds[config.scheduler.type](exp_config=config, **kwargs)
    if hasattr(config, "standin"):
        from standin.backend import StandinSGLangEngine as engine_cls
        from standin.launch import server_args_of

        server_args = server_args_of(config.sglang)
    else:
        engine_cls = RemoteSGLangEngine
        server_args = SGLangConfig.build_args(
            sglang_config=config.sglang, tp_size=alloc.parallel.tp_size, base_gpu_id=0
        )
    engine = engine_cls.as_controller(config.rollout, scheduler)
    engine.initialize(role="eval-rollout", server_args=server_args)
    return engine


# ------------------------------------------------------------------ the run


def run_length(
    engine: Any,
    config: MemAgentEvalConfig,
    n: int,
    answers: dict[str, list[str]],
    kwargs: dict[str, Any],
) -> None:
    """Evaluate every not-yet-scored sample of ``eval_{n}.json``, writing as they finish."""
    ev = config.eval
    out_path = results.results_path(ev.output_dir, n)
    done = results.scored_ids(results.read_records(out_path))
    todo = {i for i in answers if i not in done}
    bar = tqdm(
        total=len(answers),
        initial=len(answers) - len(todo),
        desc=f"eval_{n}",
        unit="sample",
        file=sys.stderr,
        dynamic_ncols=True,
    )
    start, tokens, written, failed = time.perf_counter(), 0, 0, 0
    with results.ResultWriter(out_path) as writer:
        for attempt in range(1 + ev.max_retries):
            if not todo:
                break
            path = sets.eval_file(ev.data_root, n)
            for rec in stream(engine, path, todo, kwargs, ev.concurrency):
                writer.write(rec)
                todo.discard(rec["id"])
                tokens, written = tokens + rec["output_tokens"], written + 1
                failed += rec["error"] is not None
                bar.update(1)
                bar.set_postfix(failed=failed, refresh=False)
            if todo:
                logger.warning(
                    f"eval_{n}: {len(todo)} sample(s) got no result from the engine "
                    f"(attempt {attempt + 1}/{1 + ev.max_retries})"
                )
        for sid in sorted(todo):  # the engine never answered: record why
            writer.write(
                results.make_record(
                    sid,
                    answers[sid],
                    None,
                    error=f"no result from the inference engine (rejected or timed "
                    f"out) after {1 + ev.max_retries} attempts",
                )
            )
    bar.close()
    if written:
        results.append_timing(
            ev.output_dir, n, time.perf_counter() - start, written, tokens
        )


def stream(
    engine: Any, path: Path, want: set[str], kwargs: dict[str, Any], concurrency: int
) -> Iterator[dict[str, Any]]:
    """Records of the samples ``want`` of ``path``, ``concurrency`` in flight at once.

    The file is read lazily, so only the samples in flight are held in memory.
    A None from the engine (a task it dropped) is not attributable; its sample
    is simply not yielded and the caller retries what is left.
    """
    samples = (s for s in sets.iter_eval_file(path) if s["id"] in want)
    running = 0
    pending: set[str] = set()
    exhausted = False
    while True:
        while not exhausted and running < concurrency:
            sample = next(samples, None)
            if sample is None:
                exhausted = True
                break
            engine.submit(sample, workflow=WORKFLOW, workflow_kwargs=kwargs)
            pending.add(sample["id"])
            running += 1
        if running == 0:
            return
        for rec in engine.wait(count=1, timeout=5.0, raise_timeout=False):
            running -= 1
            if rec is None or rec.get("id") not in pending:
                logger.warning(f"dropped result from the engine: {rec!r:.200}")
                continue
            pending.discard(rec["id"])
            yield rec


def write_summary(
    config: MemAgentEvalConfig,
    ids: dict[int, dict[str, list[str]]],
    kinds: dict[int, str | None],
) -> dict:
    """summary.json, results.md and accuracy.png from what is on disk."""
    ev, g, mem = config.eval, config.gconfig, config.memagent
    label = ev.label or Path(config.actor.path.rstrip("/")).name
    meta = {
        "model": config.actor.path,
        "label": label,
        "protocol": (
            f"RULER-HQA, one episode per question, boxed final answer, sub-EM; "
            f"temperature {g.temperature}, top_p {g.top_p}, chunk {mem.chunk_tokens}, "
            f"memory {mem.max_memory_tokens}, final {mem.max_final_tokens}, "
            f"max_chunks {mem.max_chunks or 'none'}, "
            f"prompts {load_prompts(mem.prompts).source}"
        ),
    }
    summary = results.summarize(
        ev.output_dir, {n: list(a) for n, a in ids.items()}, meta
    )
    built = sorted(n for n, kind in kinds.items() if kind == sets.BUILT_SET)
    for row in summary["lengths"]:
        row["set"] = kinds.get(row["length"])
    if built:
        summary["meta"]["note"] = (
            f"N={built}: {sets.BUILT_SET} sets built locally by prepare_eval_data.py "
            "--build (the official questions, documents sampled here), not the "
            "official sets"
        )
    summary["anchors"] = report.anchors_for([r["length"] for r in summary["lengths"]])
    write_json(Path(ev.output_dir) / results.SUMMARY_FILE, summary)
    report.write_report(summary, ev.output_dir, title=f"RULER-HQA: {label}")
    return summary


def load_config(argv: list[str]) -> MemAgentEvalConfig:
    """The config; a file with a ``standin:`` section is a CPU stand-in run."""
    config = load_run_config(
        argv, MemAgentEvalConfig, "standin.config.StandinEvalConfig"
    )
    return resolve_paths(config)  # relative paths mean the same in every worker


def main(argv: list[str]) -> None:
    config = load_config(argv)
    make_shared_folders(config.cluster)  # AReaL's schedulers require them
    try:
        evaluate(config)
    except EvalRefused as exc:
        logger.error(str(exc))
        sys.exit(2)


def evaluate(config: MemAgentEvalConfig) -> None:
    """Every configured length, then summary.json, results.md and accuracy.png."""
    if hasattr(config, "standin"):
        from standin.cpu_job import ensure_synthetic_eval
        from standin.tiny_model import build_tiny_model

        ensure_synthetic_eval(config)
        build_tiny_model(config.actor.path, seed=config.standin.seed)
    kwargs = check_workflow(config)
    ids, kinds = scan_lengths(config)
    out = prepare_output(config)
    todo = [
        n
        for n in config.eval.lengths
        if set(ids[n])
        - results.scored_ids(results.read_records(results.results_path(out, n)))
    ]
    if todo:
        with open_engine(config) as engine:
            for n in todo:
                run_length(engine, config, n, ids[n], kwargs)
                write_summary(config, ids, kinds)
    else:
        logger.info("every sample is already scored; rewriting the summary only")
    summary = write_summary(config, ids, kinds)
    for row in summary["lengths"]:
        logger.info(
            f"N={row['length']}: n={row['n']} failed={row['failures']} "
            + " ".join(f"{k}={row[k]}" for k in ("sub_em", "em", "f1"))
            + f" | over non-failed: sub_em={row['sub_em_non_failed']}"
        )
    logger.info(f"results in {config.eval.output_dir}/results.md")


if __name__ == "__main__":
    main(sys.argv[1:])

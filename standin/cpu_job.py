"""The CPU job: AReaL's real trainer and eval against the stand-in server.

`cpu_job(config)` prepares everything a GPU cluster would provide: the model
(a tiny random Qwen2 built offline), the data (synthetic HotpotQA-shaped
questions, unless the configured files exist) and, by ``scheduler.type``:
``local`` or ``ray``, the shared folders (and a local Ray instance) AReaL's
scheduler expects, its rollout worker then launching the stand-in (in the
protocol ``rollout.backend`` names, SGLang's or vLLM's); ``null``, one stand-in server and the process environment of a
one-process SPMD run (what `torchrun --nproc-per-node 1` and AReaL's launcher
would set).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import torch
from areal.utils import logging, name_resolve, names

from memagent_workflow.data.files import write_json
from memagent_workflow.data.synthetic import make_needle, make_synthetic, needle_of
from memagent_workflow.eval import sets
from memagent_workflow.infra.engines import rollout_backend
from memagent_workflow.infra.ray_cluster import ray_for, shutdown
from memagent_workflow.prompts import load_prompts
from standin.build_cache import MARKER_FILE
from standin.config import StandinConfig, StandinEvalConfig, StandinGRPOConfig
from standin.launch import (
    find_free_port,
    own_server_args,
    probe_flags,
    server_flags,
    start_standin_server,
)
from standin.needle_model import NeedleModelSpec, build_needle_model
from standin.packed_sdpa import install_packed_sdpa
from standin.synthetic_data import ensure_synthetic
from standin.tiny_model import build_tiny_model

logger = logging.getLogger("StandinCpuJob")


def is_checkpoint(path: str) -> bool:
    """A saved model (e.g. a trained checkpoint) rather than a stand-in build."""
    folder = Path(path)
    return (folder / "config.json").is_file() and not (folder / MARKER_FILE).exists()


def build_model(config: StandinGRPOConfig | StandinEvalConfig) -> None:
    """The model of ``standin.task`` at ``actor.path`` (built once, then reused)."""
    cfg = config.standin
    evaluating = isinstance(config, StandinEvalConfig)
    if is_checkpoint(config.actor.path) or (
        evaluating and (Path(config.actor.path) / "config.json").is_file()
    ):  # evaluation serves the model it is given, whatever built it
        logger.info(f"serving the model in {config.actor.path} as it is")
        return
    if cfg.task != "needle":
        build_tiny_model(config.actor.path, seed=cfg.seed)
        return
    build_needle_model(config.actor.path, needle_spec(config))


def needle_spec(config: StandinGRPOConfig | StandinEvalConfig) -> NeedleModelSpec:
    """The needle model a config describes (its prompts, budgets and options)."""
    mem, cfg = config.memagent, config.standin
    prompts = load_prompts(mem.prompts)
    return NeedleModelSpec(
        memory_prompt=prompts.memory_update,
        final_prompt=prompts.final_answer,
        initial_memory=mem.initial_memory,
        chunk_tokens=mem.chunk_tokens,
        chunks=cfg.needle_chunks,
        distractors=cfg.needle_distractors,
        carry=cfg.needle_carry,
        shift=cfg.needle_shift,
        overwrite=cfg.needle_overwrite,
        memory_tokens=mem.max_memory_tokens,
        seed=cfg.seed,
        layers=cfg.needle_layers,
        hidden_size=cfg.needle_hidden,
        heads=cfg.needle_heads,
        init_range=cfg.needle_init_range,
        warm_start_steps=cfg.needle_warm_start_steps,
    )


def spmd_env(server_addr: str) -> dict[str, str]:
    """Environment of rank 0 of a one-process SPMD run using ``server_addr``."""
    return {
        "AREAL_SPMD_MODE": "1",
        "AREAL_LLM_SERVER_ADDRS": server_addr,
        "RANK": "0",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": "1",
        "LOCAL_WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(find_free_port()),
        "TORCHDYNAMO_DISABLE": "1",
        "HF_HUB_OFFLINE": "1",
    }


@contextlib.contextmanager
def standin_server(
    config: StandinGRPOConfig | StandinEvalConfig, log_file: Path
) -> Iterator[str]:
    """The tiny model at ``actor.path`` (built if missing), served on CPU.

    Yields ``standin.server_addr`` when set (a server someone else runs), else the
    address of a stand-in server started here and stopped on exit.
    """
    cfg = config.standin
    build_model(config)
    if cfg.server_addr:
        yield cfg.server_addr
        return
    protocol = rollout_backend(config)
    server = start_standin_server(
        config.actor.path,
        port=cfg.port or None,
        seed=config.vllm.seed if protocol == "vllm" else config.sglang.random_seed,
        log_file=log_file,
        extra_args=server_flags(own_server_args(config, protocol), protocol)
        + probe_flags(),
    )
    logger.info(f"CPU stand-in server (not a production engine) at {server.addr}")
    try:
        yield server.addr
    finally:
        server.stop()


@contextlib.contextmanager
def cpu_job(config: StandinGRPOConfig) -> Iterator[str | None]:
    """Model, data and the inference side of a CPU training run.

    With ``scheduler.type`` set (local or ray) AReaL's scheduler starts the actor
    and rollout workers, and the rollout worker launches the stand-in server
    (see ``standin.backend``); yields None. With ``scheduler.type: null`` the run
    is one SPMD process: the server is started here and its address yielded.
    """
    cfg = config.standin
    ensure_synthetic(config.train_dataset.path, cfg, "train")
    if config.valid_dataset is not None:  # held-out questions
        ensure_synthetic(config.valid_dataset.path, cfg, "valid")
    # Keys left by an earlier run of the same trial would make the disk weight
    # update fire before its checkpoint exists (AReaL's launcher clears them too).
    name_resolve.clear_subtree(
        names.trial_root(config.experiment_name, config.trial_name)
    )
    if config.scheduler.type is not None:
        with single_controller(config):
            yield None
        after_training(config)
        return
    install_packed_sdpa()
    # The stand-in's models are tiny: one intra-op thread trains them several
    # times faster than two threads contending with the server for 2 cores (a
    # needle-task step: 0.2 s instead of 1.5-12 s on a loaded machine), and
    # leaves the other core to the server, which uses one thread too.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    log_file = Path(config.cluster.fileroot) / "standin" / "server.log"
    with standin_server(config, log_file) as addr, environ(spmd_env(addr)):
        try:
            yield addr
        finally:
            torch.set_num_threads(threads)
    after_training(config)


def after_training(config: StandinGRPOConfig) -> None:
    """What a finished CPU run does last: the length eval, if configured."""
    if config.standin.length_eval:
        from standin.length_eval import run_length_eval

        run_length_eval(config)


@contextlib.contextmanager
def single_controller(config: StandinGRPOConfig | StandinEvalConfig) -> Iterator[None]:
    """What AReaL's scheduler expects to find: the model, shared folders, Ray."""
    build_model(config)
    # AReaL's schedulers refuse folders that do not exist yet.
    Path(config.cluster.fileroot).mkdir(parents=True, exist_ok=True)
    if config.cluster.name_resolve.type == "nfs":
        Path(config.cluster.name_resolve.nfs_record_root).mkdir(
            parents=True, exist_ok=True
        )
    with contextlib.ExitStack() as stack:
        if config.scheduler.type == "ray" and config.cluster.n_nodes > 1:
            # The product's join: a running cluster of n_nodes alive nodes.
            stack.enter_context(ray_for(config))
        elif config.scheduler.type == "ray":
            stack.enter_context(local_ray(config.standin.ray_num_cpus))
        yield


@contextlib.contextmanager
def local_ray(num_cpus: int) -> Iterator[None]:
    """A Ray instance on this machine for the run, stopped afterwards.

    With ``cluster.n_nodes > 1`` the job joins a running cluster instead, as
    the product does (``memagent_workflow.infra.ray_cluster``; here
    ``python -m standin.ray_nodes --nodes 2`` starts one).
    """
    import ray

    # Ray starts its workers at niceness 15: on a busy CPU machine the actor
    # worker, importing torch and AReaL behind the run's own processes at 0, took
    # minutes to start (4.5 min measured while the test suite ran); 0 is what the
    # local scheduler's workers get. (Ray's `uv run` switch: standin/__init__.py.)
    with environ({"RAY_worker_niceness": "0"}):
        # "local": a new instance even where a cluster runs on this machine
        # (docs/multi-node.md's, or a test's), which ray.init() would join.
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False)
        logger.info(f"started a local Ray instance with {num_cpus} CPUs")
        try:
            yield
        finally:
            shutdown()  # the node watcher first, then Ray
            logger.info("stopped the local Ray instance")


@contextlib.contextmanager
def environ(values: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``values`` set, each key restored (or removed) on exit."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def ensure_synthetic_eval(config: StandinEvalConfig) -> None:
    """Synthetic ``eval_{N}.json`` and RULER task files where missing (CPU smoke
    data, never a result); the tiny model (its tokenizer) must exist."""
    n_samples, ev = config.standin.synthetic_eval, config.eval
    for n in ev.lengths if n_samples and "ruler_hqa" in ev.tasks else ():
        path = sets.eval_file(ev.data_root, n)
        if path.is_file():
            continue
        try:
            samples = synthetic_eval_set(config.standin, n_samples, n)
        except ValueError as exc:
            raise ValueError(f"cannot write synthetic eval_{n}.json: {exc}") from exc
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, samples)
        logger.warning(
            f"wrote {len(samples)} synthetic questions to {path} (CPU smoke data)"
        )
    if n_samples and any(t != "ruler_hqa" for t in ev.tasks):
        from memagent_workflow.workflow import load_tokenizer
        from standin.ruler_haystacks import write_ruler_eval

        write_ruler_eval(config, load_tokenizer(config.tokenizer_path))


def synthetic_eval_set(cfg: StandinConfig, n_samples: int, n: int) -> list[dict]:
    """``n_samples`` questions of ``eval_{n}.json``: ``n`` documents (two_hop) or
    ``n`` chunks (needle: held-out documents of another seed per length)."""
    if cfg.task != "needle":
        # One seed for every length: the same question ids at each N, as the
        # official sets share their question indices.
        return make_synthetic(n_samples, seed=cfg.seed, num_docs=n)
    rows = make_needle(
        n_samples, cfg.seed + 7919 * n, n, cfg.needle_distractors, split="valid"
    )
    # The needle sentence is the evidence an eval trace locates (eval/trace.py).
    return [{**row, "num_docs": n, "evidence": [needle_of(row)]} for row in rows]

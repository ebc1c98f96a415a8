"""The preflight: what a GPU run needs, checked without starting a server or a
worker, as one table (check, found, needed, verdict). ``examples/preflight.py``
is its command line; docs/preflight.md its manual (``step``, ``rates`` and
``projection``: the step and the run's cost, from measured rates or constants).

One module per family of checks: ``packages``, ``hardware``, ``memory``,
``budgets`` (time), ``filesystems``, ``cluster`` (Ray), ``data`` (and prompts);
``run`` holds the planned run, ``probes`` what it asks this machine (fakeable),
``model`` the model's shape, ``engine`` the rollout engine (SGLang or vLLM),
``memory_estimate`` the actor's and the rollout server's bytes
per GPU, ``lora`` what an adapter adds and needs, ``verdict`` the table.
"""

from __future__ import annotations

from memagent_workflow.preflight import (
    budgets,
    cluster,
    data,
    filesystems,
    hardware,
    memory,
    packages,
)
from memagent_workflow.preflight.memory_estimate import actor_memory, server_memory
from memagent_workflow.preflight.run import Options, Run
from memagent_workflow.preflight.verdict import Check, Verdict, blocking, render

__all__ = ["Check", "Options", "Run", "Verdict", "blocking", "render", "run_checks"]


def _free_memory_need(run: Run) -> int | None:
    """Bytes every GPU must have free: the larger of the two roles' needs."""
    shape = run.model[0]
    if shape is None or not run.gpu_run:
        return None
    gpu = run.gpu_memory_bytes[0]
    need = server_memory(run, shape, gpu).pool if run.layout.rollout_gpus else 0
    if not run.is_eval and run.layout.actor_gpus:
        dp = max(1, run.layout.actor_gpus)
        est = actor_memory(shape, run.config, dp, run.actor_offloads)
        need = max(need, est.state, est.ref, est.load_peak)
    return need or None


def run_checks(run: Run) -> list[Check]:
    """Every check, in the table's order (data first: the others use its counts)."""
    data_checks = (
        [data.check_eval_files(run)]
        if run.is_eval
        else [data.check_train_file(run, "train"), data.check_train_file(run, "valid")]
    )
    data_checks.append(data.check_prompts(run))
    return [
        packages.check_engine(run),
        packages.check_flash_attention(run),
        packages.check_torch_cuda(run),
        packages.check_nccl(run),
        packages.check_path_python(run),
        hardware.check_gpu_count(run),
        hardware.check_capability(run),
        hardware.check_free_memory(run, _free_memory_need(run)),
        memory.check_actor(run),
        memory.check_server(run),
        budgets.check_request_timeout(run),
        budgets.check_setup_timeout(run),
        filesystems.check_fileroot(run),
        filesystems.check_name_resolve(run),
        filesystems.check_disk(run),
        cluster.check_ray(run),
        *data_checks,
    ]

"""The suite's two tiers and the order its files start in (tests/conftest.py).

The README's test command runs the quick tier: what fits in 10 minutes on a slow
2-core machine: the unit and integration tests (but the few that run the GPU
docs' commands or benchmarks), and the entry scripts end to end in one process or
against one server (the main job in SPMD mode, LoRA, the eval, ask,
the service, the preflight, the data scripts, the trace page). The full tier (``-m full``,
CI's next command) is the rest, runs of minutes each: the main job launched by
AReaL's schedulers (single controller, one and two Ray nodes, Slurm, a node lost), the
chains of runs (kill and resume, the smoke's three launches), the 30-step
learning run, the service's faults and shutdowns, the eval's variants (the paper preset, every RULER task, the
RULER docs' data commands), the GPU recipes' and docs' preflight (the 7B LoRA
pair, vLLM) and the benchmarks.
"""

from __future__ import annotations

FULL_TIER = (
    "test_learning.py",
    "test_tree_learning.py",
    "test_tree_training_paper.py",
    "test_bench_tree.py",
    "test_train_launch.py",
    "test_node_loss.py",
    "test_ray_launch.py",
    "test_slurm.py",
    "test_recover.py",
    "test_smoke.py",
    "test_eval_launch.py",
    "test_side_by_side.py",
    "test_eval_ruler.py",
    "test_bench_cold_cache.py",
    "test_bench_smoke.py",
    "test_needle_probe.py",
    "test_bench.py",
    "test_eval_paper.py",
    "test_eval_docs_ruler.py",
    "test_preflight_recipes.py",
    "test_preflight_lora.py",
    "test_gpu_docs_vllm.py",
    "test_serve_recovery.py",
    "test_serve_shutdown.py",
)
FULL_COMMAND = "uv run --locked pytest -q -n auto -m full"

# Files by how long they take, the longest first: under the README's `-n auto`
# each file runs whole on one worker (pyproject's addopts), so the last to start
# should be short ones. Unlisted files follow, in collection order.
LONGEST_FIRST = (
    "test_learning.py",
    "test_tree_learning.py",
    "test_train_launch.py",
    "test_recover.py",
    "test_smoke.py",
    "test_node_loss.py",
    "test_ray_launch.py",
    "test_eval_ruler.py",
    "test_serve.py",
    "test_eval.py",
    "test_train_lora.py",
    "test_eval_paper.py",
    "test_preflight_recipes.py",
    "test_eval_launch.py",
    "test_slurm.py",
    "test_bench_cold_cache.py",
    "test_preflight_cli.py",
    "test_train_cpu.py",
    "test_preflight_lora.py",
    "test_gpu_docs_vllm.py",
    "test_bench_smoke.py",
    "test_side_by_side.py",
)


def start_order(
    files: list[str], needle_users: set[str], alone: frozenset[str] = frozenset()
) -> list[str]:
    """``files`` (names, in collection order) in the order they start.

    The warm-started needle model is built once, by the first file that asks
    for it (several minutes of one core), and every other file that uses it
    waits for that build. So the longest such file starts first, then every
    file that does not use it (the other workers stay busy meanwhile), then the
    rest of its users: started earlier, they would sit idle on the build.
    Files that run ``alone`` (tests/runs_alone.py) start last: one started
    earlier would stop every worker until the files in flight ended, where at
    the end the workers have nothing left to start anyway.
    """
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    by_length = sorted(files, key=lambda f: rank.get(f, len(rank)))  # stable
    users = [f for f in by_length if f in needle_users and f not in alone]
    free = [f for f in by_length if f not in needle_users and f not in alone]
    return users[:1] + free + users[1:] + [f for f in by_length if f in alone]


def left_out(files: list[str], markexpr: str, named: set[str]) -> set[str]:
    """The full tier's files the run leaves out: all of them unless the run
    selects by marker (``-m``) or names the file."""
    if markexpr:
        return set()
    return {f for f in files if f in FULL_TIER and f not in named}

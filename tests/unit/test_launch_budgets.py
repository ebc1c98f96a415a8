"""config.yaml's launch budgets hold the arithmetic its comments state: a group
fits in the rollout timeout, a first start in the setup timeout, a node's 8
workers in a 512 GB node's Ray memory; config_eval.yaml accepts the SPMD
launcher's allocation."""

from __future__ import annotations

from pathlib import Path

from examples.eval import load_config as load_eval_config
from examples.train import load_config

ROOT = Path(__file__).resolve().parents[2]

# config.yaml's estimate of one turn at the recipe's scale (256 requests sent
# to a server whose KV cache holds ~110 turns at once): up to 2 minutes.
TURN_S = 120
GB = 10**9


def test_a_group_fits_in_the_rollout_timeout(tmp_path):
    cfg = load_config(
        ["--config", str(ROOT / "config.yaml"), f"cluster.fileroot={tmp_path}"]
    )
    turns = cfg.memagent.max_chunks + 1  # memory turns, then the answer
    group_s = turns * TURN_S + cfg.memagent.engine_retry_s  # + a server restart
    assert cfg.rollout.request_timeout >= 2 * group_s  # the 2x margin it claims
    assert cfg.rollout.setup_timeout >= 1800  # a first start downloads 15 GB


def test_a_node_of_workers_fits_a_512_gb_node(tmp_path):
    cfg = load_config(
        ["--config", str(ROOT / "config.yaml"), f"cluster.fileroot={tmp_path}"]
    )
    spec = cfg.actor.scheduling_spec[0]
    per_node = cfg.cluster.n_gpus_per_node * spec.mem * GB
    ray_memory = 512 * GB - min(0.3 * 512 * GB, 200 * GB)  # less the object store
    assert per_node <= ray_memory
    assert cfg.rollout.scheduling_spec[0].mem == spec.mem


def test_the_eval_config_takes_the_launchers_allocation(tmp_path):
    cfg = load_eval_config(
        [
            "--config",
            str(ROOT / "config_eval.yaml"),
            f"cluster.fileroot={tmp_path}",
            "allocation_mode=sglang:d1+fsdp:d1",
        ]  # fmt: skip
    )
    assert cfg.allocation_mode == "sglang:d1+fsdp:d1"
    assert cfg.rollout.request_timeout >= 180 * TURN_S  # 6400 docs: ~180 turns

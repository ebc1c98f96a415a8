"""AReaL's PPOTrainer with a one-line-per-step report (log line and steps.jsonl)."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import torch.distributed as dist
from areal import PPOTrainer
from areal.infra.platforms import current_platform
from areal.utils import logging
from areal.utils.environ import is_single_controller
from areal.utils.stats_logger import StatsLogger

logger = logging.getLogger("MemAgentTrainer")

STALENESS = "ppo_actor/update/version_stats/sample_staleness_theta"


def step_line(stats: dict[str, Any], global_step: int, elapsed_s: float) -> dict:
    """The step's headline numbers, from AReaL's exported stats."""
    return {
        "step": global_step + 1,
        "reward": stats.get("rollout/memagent/reward"),
        "rows": int(stats.get("ppo_actor/n_seqs", 0)),
        "staleness_avg": stats.get(f"{STALENESS}_avg"),
        "staleness_max": stats.get(f"{STALENESS}_max"),
        "oldest_rollout_version": stats.get("rollout/memagent/oldest_version"),
        "memory_tokens": stats.get("rollout/memagent/memory_tokens"),
        "grad_norm": stats.get("ppo_actor/update/grad_norm"),
        "eval_sub_em": stats.get("eval-rollout/memagent/sub_em"),
        "timing_s": {
            k.removeprefix("timeperf/"): round(v, 2)
            for k, v in stats.items()
            if k.startswith("timeperf/") and not k.endswith("__count")
        },
        "elapsed_s": round(elapsed_s, 1),
    }


class MemAgentPPOTrainer(PPOTrainer):
    """PPOTrainer that also reports each step on one line and in ``steps.jsonl``.

    ``steps.jsonl`` sits in the stats logger's folder
    (``{fileroot}/logs/{user}/{experiment}/{trial}``).
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._start = time.perf_counter()
        self.steps_path = os.path.join(
            StatsLogger.get_log_path(self.config.stats_logger), "steps.jsonl"
        )

    def _export_and_commit_stats(self, epoch: int, epoch_step: int, global_step: int):
        # Mirrors PPOTrainer._export_and_commit_stats (pinned by
        # tests/unit/test_areal_pins.py) and keeps the stats for the report.
        stats = self.actor.export_stats()
        stats.update(self.rollout.export_stats())
        if self.eval_rollout is not None:
            stats.update(self.eval_rollout.export_stats())
        self.stats_logger.commit(epoch, epoch_step, global_step, stats)
        if int(os.environ.get("RANK", "0")) == 0:
            self.report(
                step_line(stats, global_step, time.perf_counter() - self._start)
            )
        if not is_single_controller():
            dist.barrier(group=self.actor.cpu_group)
            current_platform.synchronize()

    def report(self, line: dict) -> None:
        """Log the step's line and append it to ``steps.jsonl``."""
        t = line["timing_s"]
        logger.info(
            f"step {line['step']}: reward {line['reward'] or 0:.3f} | "
            f"{line['rows']} rows | staleness avg {line['staleness_avg'] or 0:.2f} "
            f"max {line['staleness_max'] or 0:.0f} | rollout {t.get('rollout', 0)}s "
            f"train {t.get('train_step', 0)}s weights {t.get('update_weights', 0)}s"
        )
        with open(self.steps_path, "a") as f:
            f.write(json.dumps(line) + "\n")

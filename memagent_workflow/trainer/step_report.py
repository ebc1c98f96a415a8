"""One line per training step: AReaL's stats logger, plus the project's step report.

AReaL's trainer hands every step's exported stats (actor, rollout and, after a
validation, eval-rollout) to its stats logger's ``commit``. `StepReport` wraps
that logger (wandb, swanlab, TensorBoard and the stats table go on as AReaL writes
them); its ``commit`` also logs the step's headline numbers as one line,
appends them to ``steps.jsonl`` in the logger's folder
``{fileroot}/logs/{user}/{experiment}/{trial}``, advances a progress bar and,
after each validation, redraws ``learning_curve.png`` beside it.

A step's rollout stats are not those of the batch it trained: they are what
the rollout workers recorded since the previous step's export (the workflow
records a group's stats when the group finishes, and AReaL exports and resets
its stats trackers once per step, in ``PPOTrainer._export_and_commit_stats``).
Rollout runs ahead of training (``max_head_offpolicyness``), so a step's groups
may all finish, and be reported, before the previous step's export; if no
group finishes after it, the step receives no rollout stats at all. Its line
then says "rollout stats not received for this step" and ``steps.jsonl`` holds
``"rollout_stats": false`` (its groups were counted in an earlier step's line).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from areal.utils import logging
from areal.utils.stats_logger import StatsLogger
from tqdm import tqdm

from memagent_workflow.infra.terminal import console
from memagent_workflow.trainer.curve import plot_curves, read_steps
from memagent_workflow.trainer.kl_loss import KL_STAT
from memagent_workflow.trainer.prox_approx import approx_errors
from memagent_workflow.trainer.tied_groups import step_counts
from memagent_workflow.trainer.tree_actor import saved_share, token_counts

logger = logging.getLogger("MemAgentTrainer")

STALENESS = "ppo_actor/update/version_stats/sample_staleness_theta"
ROLLOUT = "rollout/"  # the prefix of every rollout stat (AReaL's and the workflow's)
NO_ROLLOUT_STATS = "rollout stats not received for this step"


def _total(stats: dict[str, Any], key: str) -> int:
    """A per-group mean times its count: the step's total."""
    return round(stats.get(key, 0.0) * stats.get(f"{key}__count", 0))


def step_line(stats: dict[str, Any], global_step: int, elapsed_s: float) -> dict:
    """The step's headline numbers, from AReaL's exported stats."""
    return {
        "step": global_step + 1,
        # False: no rollout stat in this step's export (see the module doc).
        "rollout_stats": any(k.startswith(ROLLOUT) for k in stats),
        "reward": stats.get("rollout/memagent/reward"),
        "rows": int(stats.get("ppo_actor/n_seqs", 0)),
        "staleness_avg": stats.get(f"{STALENESS}_avg"),
        "staleness_max": stats.get(f"{STALENESS}_max"),
        "oldest_rollout_version": stats.get("rollout/memagent/oldest_version"),
        "memory_tokens": stats.get("rollout/memagent/memory_tokens"),
        "grad_norm": stats.get("ppo_actor/update/grad_norm"),
        "actor_loss": stats.get("ppo_actor/update/actor_loss/avg"),
        # The original's KL loss (actor.kl_loss_coef > 0): token-mean k3, before
        # the coefficient; None when off.
        "kl_loss": stats.get(f"ppo_actor/update/{KL_STAT}/avg"),
        "lr": stats.get("ppo_actor/update/lr"),
        "groups_rejected": int(stats.get("rollout/rejected__count", 0)),
        **step_counts(stats),  # groups, tied_groups, rows_tied, rows/tokens_skipped
        "episodes_failed": _total(stats, "rollout/memagent/episodes_failed"),
        "calls_retried": _total(stats, "rollout/memagent/calls_retried"),
        **token_counts(stats),  # actor_tokens_rows, actor_tokens_computed
        "rollout_prompt_tokens": _total(stats, "rollout/memagent/prompt_tokens"),
        "rollout_prompt_tokens_shared": _total(
            stats, "rollout/memagent/prompt_tokens_shared"
        ),
        "eval_reward": stats.get("eval-rollout/memagent/reward"),
        "eval_sub_em": stats.get("eval-rollout/memagent/sub_em"),
        "prox_approx_error": approx_errors(stats),  # prox_logp_method: metrics
        "timing_s": {
            k.removeprefix("timeperf/"): round(v, 2)
            for k, v in stats.items()
            if k.startswith("timeperf/") and not k.endswith("__count")
        },
        "elapsed_s": round(elapsed_s, 1),
    }


def _fmt(value: float | None) -> str:
    # None with rollout stats received: no group that finished since the last
    # export had a reward (all were rejected).
    return "n/a" if value is None else f"{value:.3f}"


def format_line(line: dict) -> str:
    """The step's line as the log and the terminal show it."""
    t = line["timing_s"]
    received = line.get("rollout_stats", True)  # lines of older runs lack it
    parts = [
        f"step {line['step']}: "
        + (f"reward {_fmt(line['reward'])}" if received else NO_ROLLOUT_STATS),
        f"{line['rows']} rows",
        f"staleness avg {line['staleness_avg'] or 0:.2f} "
        f"max {line['staleness_max'] or 0:.0f}",
    ]
    if received:
        parts.append(
            f"{line['groups_rejected']} groups rejected, {line['episodes_failed']} "
            f"episodes failed, {line['calls_retried']} calls retried"
        )
    parts += [
        f"{line.get('tied_groups')} of {line.get('groups')} groups tied, "
        f"{line.get('rows_skipped')} rows skipped",
        f"rollout {t.get('rollout', 0)}s train {t.get('train_step', 0)}s "
        f"weights {t.get('update_weights', 0)}s",
    ]
    if (saved := saved_share(line)) is not None:
        parts.append(
            f"actor computed {line['actor_tokens_computed']} of "
            f"{line['actor_tokens_rows']} row tokens ({saved:.0%} saved)"
        )
    if line.get("rollout_prompt_tokens"):
        parts.append(
            f"{line['rollout_prompt_tokens_shared']} of "
            f"{line['rollout_prompt_tokens']} prompt tokens shared"
        )
    if line["eval_reward"] is not None:
        parts.append(f"validation accuracy {line['eval_reward']:.3f}")
    return " | ".join(parts)


class StepReport:
    """AReaL's `StatsLogger`, wrapped: its ``commit`` also writes the step report.

    Built from the logger ``PPOTrainer.__init__`` made, ``StatsLogger(config,
    ft_spec)``, which it keeps and calls (``commit``, ``state_dict``,
    ``load_state_dict``, ``close``), rather than as a second `StatsLogger`: the
    constructor opens the wandb and swanlab runs and the TensorBoard writer, so
    a second one would open them twice (a second events file, a second swanlab
    experiment), and closing AReaL's first would finish its runs and log
    "Training completes!" at start-up. The wrapped logger also holds the step
    counter a recover checkpoint restored into it. ``chance``: the accuracy of a
    guess, drawn on the learning curve.
    """

    def __init__(
        self, stats_logger: StatsLogger, title: str, chance: float | None = None
    ):
        self.areal_logger = stats_logger
        log_dir = StatsLogger.get_log_path(stats_logger.config)
        self.steps_path = os.path.join(log_dir, "steps.jsonl")
        self.curve_path = os.path.join(log_dir, "learning_curve.png")
        self.title, self.chance = title, chance
        self.started = time.perf_counter()
        self.bar: tqdm | None = None
        self._first_commit_done = False

    def state_dict(self) -> dict[str, Any]:
        return self.areal_logger.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.areal_logger.load_state_dict(state_dict)

    def commit(
        self, epoch: int, step: int, global_step: int, data: dict | list[dict]
    ) -> None:
        self.areal_logger.commit(epoch, step, global_step, data)
        if not self.on_rank0() or not isinstance(data, dict):
            return
        line = step_line(data, global_step, time.perf_counter() - self.started)
        logger.info(format_line(line))
        with open(self.steps_path, "a") as f:
            for lost in self._unreported(line["step"]):
                f.write(json.dumps({"step": lost, "lost": True}) + "\n")
            f.write(json.dumps(line) + "\n")
        if line["eval_reward"] is not None:
            self.draw_curve()
        self.advance(global_step + 1)

    def _unreported(self, step: int) -> list[int]:
        """Steps before ``step`` that no line reports, on this process's first
        commit: AReaL saves a step's recover checkpoint before it evaluates and
        commits the step, so a run that died in between (e.g. its eval worker's
        node lost) resumes after a step it never reported. They are marked
        ``"lost": true``: trained and checkpointed, their stats gone."""
        if self._first_commit_done:
            return []
        self._first_commit_done = True
        if not os.path.isfile(self.steps_path):
            return []
        seen = {s.get("step") for s in read_steps(self.steps_path)}
        if not seen:
            return []
        lost = [n for n in range(max(seen) + 1, step) if n not in seen]
        if lost:
            logger.warning(
                f"step(s) {', '.join(map(str, lost))} were trained and checkpointed "
                "by the run that stopped, which died before reporting them: "
                'steps.jsonl marks them "lost": true (their stats are gone)'
            )
        return lost

    @staticmethod
    def on_rank0() -> bool:
        return int(os.environ.get("RANK", "0")) == 0

    def advance(self, steps_done: int) -> None:
        """The progress bar over the run's steps, on a terminal (not in a file)."""
        total = self.areal_logger.ft_spec.total_train_steps
        limit = getattr(self.areal_logger.exp_config, "total_train_steps", None)
        if limit is not None:
            total = min(total, limit)
        if self.bar is None:
            self.bar = tqdm(
                total=total, initial=steps_done - 1, desc="training", unit="step",
                file=console(), dynamic_ncols=True, disable=not console().isatty(),
            )  # fmt: skip
        self.bar.update(steps_done - self.bar.n)

    def draw_curve(self) -> None:
        """Redraw ``learning_curve.png`` (beside ``steps.jsonl``) from the steps."""
        plot_curves(
            {"validation accuracy": read_steps(self.steps_path)},
            self.curve_path,
            chance=self.chance,
            title=f"{self.title}: GRPO learning curve",
        )

    def summary(self) -> str:
        """The run in one line: steps, time, held-out accuracy, where the rest is."""
        steps = read_steps(self.steps_path) if os.path.isfile(self.steps_path) else []
        evals = [s["eval_reward"] for s in steps if s.get("eval_reward") is not None]
        accuracy = (
            f"; validation accuracy {evals[0]:.3f} at the first evaluation, "
            f"{evals[-1]:.3f} at the last"
            if evals
            else ""
        )
        minutes = (steps[-1]["elapsed_s"] / 60) if steps else 0.0
        return (
            f"{len(steps)} steps in {minutes:.1f} min{accuracy}. Steps, curve, "
            f"logs and stats in {os.path.dirname(self.steps_path)}"
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        self.areal_logger.close()

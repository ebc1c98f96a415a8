"""Pins on AReaL 1.0.4 internals the project overrides: an upgrade must break loudly.

``MemAgentPPOTrainer`` replaces ``PPOTrainer._export_and_commit_stats`` (a private
method) with a mirror that also keeps the stats for the step report. If AReaL
changes that method, the mirror would silently drop the change; this test fails
first, saying what to re-check.
"""

import inspect

from areal import PPOTrainer

MIRRORED = """
        stats = self.actor.export_stats()
        stats.update(self.rollout.export_stats())
        if self.eval_rollout is not None:
            stats.update(self.eval_rollout.export_stats())
        self.stats_logger.commit(epoch, epoch_step, global_step, stats)
"""


def body_lines(source: str) -> list[str]:
    return [line.strip() for line in source.splitlines() if line.strip()]


def test_export_and_commit_stats_is_what_memagent_mirrors():
    method = PPOTrainer._export_and_commit_stats
    assert list(inspect.signature(method).parameters) == [
        "self",
        "epoch",
        "epoch_step",
        "global_step",
    ], (
        "AReaL changed PPOTrainer._export_and_commit_stats; update memagent_workflow/trainer.py"
    )
    source = body_lines(inspect.getsource(method))
    for line in body_lines(MIRRORED):
        assert line in source, (
            f"AReaL's PPOTrainer._export_and_commit_stats no longer has {line!r}; "
            "re-check the mirror in memagent_workflow/trainer.py"
        )


def test_the_mirror_keeps_every_line_of_the_original():
    from memagent_workflow.trainer import MemAgentPPOTrainer

    original = body_lines(inspect.getsource(PPOTrainer._export_and_commit_stats))[1:]
    mirror = body_lines(inspect.getsource(MemAgentPPOTrainer._export_and_commit_stats))
    code = [line for line in original if not line.startswith("#")]
    assert [line for line in code if line not in mirror] == []

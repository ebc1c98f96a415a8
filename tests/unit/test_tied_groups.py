"""Tied groups: marked by the workflow, counted every step, skipped on request,
and every question of the batch still counted as trained."""

import json
from types import SimpleNamespace

import pytest
import torch
from areal.api.cli_args import TrainDatasetConfig
from areal.utils import stats_tracker
from areal.utils.dataloader import create_dataloader

from memagent_workflow.recovery.batches import MarksTrainedQuestions
from memagent_workflow.recovery.ledger import IndexedRows, QuestionLedger
from memagent_workflow.rows import TIED_KEY, tied_flags
from memagent_workflow.trainer.actor import MemAgentActorController, MemAgentPPOActor
from memagent_workflow.trainer.step_report import StepReport, step_line
from memagent_workflow.trainer.tied_groups import (
    SkipsTiedGroups,
    drop_tied_groups,
    split_tied,
)
from tests.unit.test_step_report import logger as areal_logger

QUESTIONS = 6


def group(question: int, rows: int, width: int, tied: bool) -> dict:
    """A group's trajectory dict as the workflow returns it (``width`` tokens a row)."""
    advantages = [0.0] * rows if tied else [0.5, -0.5] * (rows // 2)
    mask = torch.zeros(rows, width + 2, dtype=torch.bool)
    mask[:, :width] = True
    return {
        "input_ids": torch.ones(rows, width + 2, dtype=torch.int32),
        "attention_mask": mask,
        "rewards": torch.tensor(advantages),
        "question_index": torch.full((rows,), question, dtype=torch.int64),
        TIED_KEY: tied_flags(rows, advantages),
    }


# questions 1, 2 and 4 tie; rows and widths differ so that counts identify groups
BATCH = [
    group(0, 4, 5, tied=False),
    group(1, 6, 3, tied=True),
    group(2, 2, 7, tied=True),
    group(3, 4, 2, tied=False),
    group(4, 8, 1, tied=True),
    group(5, 2, 4, tied=False),
]


def test_the_workflow_marks_a_group_tied_only_when_every_advantage_is_zero():
    assert tied_flags(3, [0.0, 0.0, 0.0]).tolist() == [1, 1, 1]
    assert tied_flags(3, [0.0, 0.5, -0.5]).tolist() == [0, 0, 0]
    assert tied_flags(2, [1e-9, -1e-9]).tolist() == [0, 0]  # not a tie: a gradient


def test_the_filter_removes_exactly_the_tied_groups_and_counts_them():
    split = split_tied(BATCH, skip=True)
    assert [int(g["question_index"][0]) for g in split.kept] == [0, 3, 5]
    assert [int(g["question_index"][0]) for g in split.skipped] == [1, 2, 4]
    assert split.counts == {
        "memagent/groups": 6.0,
        "memagent/tied_groups": 3.0,
        "memagent/rows_tied": 16.0,  # 6 + 2 + 8
        "memagent/rows_skipped": 16.0,
        "memagent/tokens": 4 * 5 + 6 * 3 + 2 * 7 + 4 * 2 + 8 * 1 + 2 * 4,
        "memagent/tokens_skipped": 6 * 3 + 2 * 7 + 8 * 1.0,
    }


def test_without_the_option_nothing_leaves_but_the_tied_groups_are_counted():
    split = split_tied(BATCH, skip=False)
    assert split.kept == BATCH and split.skipped == []
    assert split.counts["memagent/tied_groups"] == 3
    assert split.counts["memagent/rows_tied"] == 16
    assert split.counts["memagent/rows_skipped"] == 0


def test_an_all_tied_step_keeps_its_cheapest_groups_so_the_actor_still_steps():
    tied = [g for g in BATCH if g[TIED_KEY][0]]  # tokens: 18, 14, 8
    split = split_tied(tied, skip=True, min_groups=1)
    assert [int(g["question_index"][0]) for g in split.kept] == [4]  # 8 tokens
    split = split_tied(tied, skip=True, min_groups=2)  # e.g. two data-parallel ranks
    assert sorted(int(g["question_index"][0]) for g in split.kept) == [2, 4]
    assert split.counts["memagent/rows_skipped"] == 6
    assert split.counts["memagent/tied_groups"] == 3


def test_too_few_untied_groups_for_the_ranks_are_topped_up_with_tied_ones():
    split = split_tied(BATCH[:3], skip=True, min_groups=2)  # one untied group
    assert [int(g["question_index"][0]) for g in split.kept] == [0, 2]


def test_groups_without_a_mark_are_never_skipped():
    unmarked = [{k: v for k, v in g.items() if k != TIED_KEY} for g in BATCH]
    assert split_tied(unmarked, skip=True).kept == unmarked


def ledger() -> QuestionLedger:
    rows = [{"id": f"q{i}", "question": f"question {i}"} for i in range(QUESTIONS)]
    config = TrainDatasetConfig(path="-", batch_size=QUESTIONS, shuffle=False)
    loader = create_dataloader(IndexedRows(rows), 0, 1, config)
    return QuestionLedger(loader, prefetch_batches=1)


class ControllerBase:
    """The single controller's actor, as far as the hook uses it."""

    def __init__(self, dp_size: int = 1):
        self.parallel_strategy = SimpleNamespace(dp_size=dp_size)
        self.released: list[dict] = []

    def prepare_batch(self, dataloader, **kwargs):
        handed = [item["question_index"] for item in next(iter(dataloader))]
        assert handed == list(range(QUESTIONS))  # the groups of BATCH
        return list(BATCH)

    def clear_batches(self, *targets):
        for target in targets:
            self.released += target


class Actor(SkipsTiedGroups, MarksTrainedQuestions, ControllerBase):
    """The project's actor (controller) over it: its bases, in their order."""

    def __init__(self, skip: bool, dp_size: int = 1):
        super().__init__(dp_size)
        self.skip_tied_groups = skip


def test_the_actor_and_its_controller_mark_questions_before_the_drop():
    for cls in (MemAgentPPOActor, MemAgentActorController):
        mro = cls.__mro__
        assert mro.index(SkipsTiedGroups) < mro.index(MarksTrainedQuestions)
        assert cls.skip_tied_groups is False  # the default: the paper's objective


def test_the_controller_gets_the_switch_from_the_trainer(monkeypatch):
    from areal.api.cli_args import PPOActorConfig

    built = {}

    def init(self, train_engine, config, scheduler):
        built.update(engine=train_engine, scheduler=scheduler)

    monkeypatch.setattr("areal.trainer.ppo.actor.PPOActorController.__init__", init)
    controller = MemAgentPPOActor.as_controller(
        PPOActorConfig(experiment_name="e", trial_name="t"),
        "the scheduler",
        skip_tied_groups=True,
    )
    assert isinstance(controller, MemAgentActorController)
    assert controller.skip_tied_groups is True
    assert built == {"engine": MemAgentPPOActor, "scheduler": "the scheduler"}


@pytest.mark.parametrize("spmd", [False, True])
def test_skipped_groups_leave_the_actor_batch_but_their_questions_count_as_trained(
    spmd, monkeypatch
):
    if spmd:
        monkeypatch.setenv("AREAL_SPMD_MODE", "1")
    actor = Actor(skip=True)
    book = ledger()
    stats_tracker.export_all(reset=True)
    batch = actor.prepare_batch(book, workflow=None)
    assert [int(g["question_index"][0]) for g in batch] == [0, 3, 5]
    assert book.untrained() == []  # all six questions, the tied ones included
    assert book.steps == 1
    # single controller: the skipped groups' stored shards are freed at once
    released = [int(g["question_index"][0]) for g in actor.released]
    assert released == ([] if spmd else [1, 2, 4])


def test_the_counts_land_in_steps_jsonl_and_the_step_line(tmp_path, monkeypatch):
    logged = []
    monkeypatch.setattr(
        "memagent_workflow.trainer.step_report.logger",
        SimpleNamespace(info=logged.append),
    )
    report = StepReport(areal_logger(tmp_path), title="exp/t0")
    stats_tracker.export_all(reset=True)
    Actor(skip=True).prepare_batch(ledger(), workflow=None)
    stats = stats_tracker.export_all(reset=True)  # what the actor exports
    report.commit(0, 0, 0, stats)
    report.close()
    line = json.loads(next((tmp_path / "logs").rglob("steps.jsonl")).read_text())
    assert line["groups"] == 6
    assert line["tied_groups"] == 3
    assert line["rows_tied"] == line["rows_skipped"] == 16
    assert line["tokens_skipped"] == 40
    assert "3 of 6 groups tied, 16 rows skipped" in logged[-1]


def test_a_step_without_counts_still_reports(tmp_path):
    line = step_line({}, global_step=0, elapsed_s=1.0)
    assert line["tied_groups"] is None and line["rows_skipped"] is None
    assert drop_tied_groups([], skip=True) == []

"""The question ledgers stay right when AReaL deals finished groups out to other
data-parallel ranks: two ranks over gloo (two processes), each handing out its
own shard and training the other's questions, as `redistribute_trajectories` can
arrange."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp
from areal.api.cli_args import TrainDatasetConfig
from areal.utils.dataloader import create_dataloader

from memagent_workflow.recovery.ledger import (
    IndexedRows,
    QuestionLedger,
    assign_owners,
)
from memagent_workflow.recovery.ledger_sync import mark_trained_across_ranks
from memagent_workflow.rows import INDEX_KEY
from standin.launch import find_free_port

ROWS = [{"id": f"q{i}", "question": f"question {i}"} for i in range(8)]
WORLD = 2


def _ledger(rank: int, log_path: str | None) -> QuestionLedger:
    config = TrainDatasetConfig(path="-", batch_size=4, shuffle=True)
    loader = create_dataloader(IndexedRows(ROWS), rank, WORLD, config)
    return QuestionLedger(loader, prefetch_batches=1, log_path=log_path)


def _hand_out(ledger: QuestionLedger) -> list[int]:
    return [row[INDEX_KEY] for row in next(iter(ledger))]


def _scenario(rank: int, out: str, drop: bool) -> None:
    """Hand out a batch, train what the other rank handed out (less one group of
    rank 0's if ``drop``), settle, report in ``out``."""
    log = os.path.join(out, "questions.jsonl") if rank == 0 else None
    fixed, plain = _ledger(rank, log), _ledger(rank, None)
    handed = _hand_out(fixed)
    assert _hand_out(plain) == handed
    shards: list = [None] * WORLD
    dist.all_gather_object(shards, handed)
    trained = list(shards[1 - rank])  # the other rank's groups
    if drop and rank == 1:
        trained = trained[1:]  # rank 0's first group was rejected
    passes = mark_trained_across_ranks(fixed, trained)
    plain.mark_trained(trained)  # each rank on its own, as before the fix
    report = {
        "handed": handed,
        "trained": trained,
        "passes": passes,
        "untrained": fixed.untrained(),
        "resume_replays": fixed.state_dict()["outstanding"],
        "plain_untrained": plain.untrained(),
    }
    Path(out, f"rank{rank}.json").write_text(json.dumps(report))


def _rank(rank: int, outs: dict[str, str], port: int) -> None:
    """One data-parallel rank, through each scenario (``outs``: folder per
    ``drop`` setting) in one process group: one pair of processes for all."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    try:
        for drop, out in outs.items():
            _scenario(rank, out, drop == "drop")
    finally:
        dist.destroy_process_group()


def reports(out: Path) -> list[dict]:
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(WORLD)]


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory) -> dict[str, Path]:
    """Both scenarios' folders: ``swap`` (every group trained by the other rank)
    and ``drop`` (one of rank 0's groups rejected), run by one pair of ranks."""
    outs = {name: tmp_path_factory.mktemp(name) for name in ("swap", "drop")}
    args = ({k: str(v) for k, v in outs.items()}, find_free_port())
    mp.spawn(_rank, args=args, nprocs=WORLD)
    return outs


@pytest.fixture(scope="module")
def swapped(scenarios):
    return scenarios["swap"], reports(scenarios["swap"])


def test_every_question_trained_by_another_rank_is_settled_where_handed_out(swapped):
    _, (r0, r1) = swapped
    assert set(r0["handed"]).isdisjoint(r1["handed"])  # each rank its own shard
    assert r0["trained"] == r1["handed"] and r1["trained"] == r0["handed"]
    for rank in (r0, r1):
        assert rank["untrained"] == [] and rank["resume_replays"] == []
        assert rank["passes"] == [0, 0, 0, 0]  # the whole step, on every rank


def test_settling_per_rank_alone_would_replay_trained_questions(swapped):
    # What the ledger did before: each rank marks only the rows it trains; the
    # questions it handed out stay outstanding and a resume would replay them.
    _, (r0, r1) = swapped
    assert sorted(i for i, _ in r0["plain_untrained"]) == sorted(r0["handed"])
    assert sorted(i for i, _ in r1["plain_untrained"]) == sorted(r1["handed"])


def test_the_log_of_rank_zero_holds_the_whole_step(swapped):
    out, (r0, r1) = swapped
    (line,) = [
        json.loads(x) for x in (out / "questions.jsonl").read_text().splitlines()
    ]
    want = [f"q{i}" for i in r1["handed"] + r0["handed"]]  # rank order
    assert line["questions"] == want and line["passes"] == [0, 0, 0, 0]


def test_a_rejected_group_stays_with_the_rank_that_handed_it_out(scenarios):
    r0, r1 = reports(scenarios["drop"])
    assert r0["untrained"] == [[r0["handed"][0], 0]]
    assert r0["resume_replays"] == [[r0["handed"][0], 0]]
    assert r1["untrained"] == []


def test_owners_oldest_pass_first_then_lowest_rank():
    claims = [{5: [1], 6: [0]}, {5: [0, 1], 6: [0]}]
    assert assign_owners([5, 5, 5, 6, 7], claims) == [
        (1, 0),  # rank 1 holds pass 0
        (0, 1),  # pass 1 on a tie: rank 0
        (1, 1),
        (0, 0),
        None,  # handed out by no rank
    ]

"""QuestionLedger: AReaL's order, resumes that neither repeat nor skip, bounded waits."""

import json
import pickle

import pytest
from areal.api.cli_args import TrainDatasetConfig
from areal.utils.data import cycle_dataloader
from areal.utils.dataloader import create_dataloader

from memagent_workflow.recovery.ledger import (
    IndexedRows,
    QuestionLedger,
    RolloutStalled,
)

ROWS = [{"id": f"q{i}", "question": f"question {i}"} for i in range(10)]
BATCH = 2


def ledger(prefetch=1, log_path=None, rows=ROWS):
    config = TrainDatasetConfig(path="-", batch_size=BATCH, shuffle=True)
    loader = create_dataloader(IndexedRows(rows), 0, 1, config)
    return QuestionLedger(loader, prefetch_batches=prefetch, log_path=log_path)


def pull(source, n):
    """The next ``n`` question indices, taken as AReaL's executor takes them."""
    return [next(source)["question_index"] for _ in range(n)]


def items(data_loader):
    """AReaL's task generator: one item at a time from ``cycle_dataloader``."""
    return (item for batch in cycle_dataloader(data_loader) for item in batch)


def test_hands_out_areal_sampler_order_every_epoch():
    config = TrainDatasetConfig(path="-", batch_size=BATCH, shuffle=True)
    plain = create_dataloader(IndexedRows(ROWS), 0, 1, config)
    expected = [row["question_index"] for row in items_n(plain, 20)]
    book = ledger()
    got = []
    source = items(book)
    for _ in range(10):  # trains as it goes, as a run does
        batch = pull(source, BATCH)
        book.mark_trained(batch)
        got += batch
    assert got == expected
    assert sorted(got[:10]) == sorted(got[10:]) == list(range(10))
    assert got[:10] != got[10:]  # a new shuffle each epoch


def items_n(data_loader, n):
    out = []
    for item in items(data_loader):
        out.append(item)
        if len(out) == n:
            return out


def test_a_resumed_run_trains_every_question_of_the_epoch_exactly_once():
    first = ledger(prefetch=1)
    source = items(first)
    trained = []
    handed = pull(source, 6)  # one batch trained, two more in flight
    done = [handed[0], handed[3]]  # groups finish out of order
    first.mark_trained(done)
    trained += done
    state = pickle.loads(pickle.dumps(first.state_dict()))  # the crash

    second = ledger(prefetch=1)
    second.load_state_dict(state)
    source = items(second)
    again = pull(source, 8)  # the rest of epoch 0
    assert again[:4] == [i for i in handed if i not in done]  # in flight: first
    second.mark_trained(again)
    trained += again
    assert sorted(trained) == list(range(10))  # none twice, none skipped
    assert second.steps == 2


def test_a_run_killed_again_while_replaying_loses_nothing():
    first = ledger(prefetch=1)
    source = items(first)
    handed = pull(source, 8)
    first.mark_trained(handed[:2])
    second = ledger(prefetch=1)
    second.load_state_dict(first.state_dict())
    source = items(second)
    assert pull(source, 2) == handed[2:4]  # 4 more wait to be replayed
    second.mark_trained(handed[2:4])
    third = ledger(prefetch=1)
    third.load_state_dict(second.state_dict())  # killed mid-replay
    rest = pull(items(third), 6)
    assert rest[:4] == handed[4:8]
    assert sorted(handed[:4] + rest) == list(range(10))


def test_a_run_resumed_in_a_later_epoch_keeps_that_epochs_shuffle():
    straight = ledger(prefetch=0)
    source = items(straight)
    for _ in range(7):
        straight.mark_trained(pull(source, BATCH))
    state = straight.state_dict()  # epoch 1, two batches in
    expected = pull(source, 4)

    resumed = ledger(prefetch=0)
    resumed.load_state_dict(pickle.loads(pickle.dumps(state)))
    assert pull(items(resumed), 4) == expected


def test_a_step_that_keeps_pulling_questions_stops_with_a_clear_error():
    book = ledger(prefetch=1)
    source = items(book)
    pull(source, 10)  # two batches queued, two in flight, one batch rejected
    with pytest.raises(RolloutStalled, match="servers are down"):
        pull(source, 1)
    book = ledger(prefetch=1)
    source = items(book)
    for _ in range(3):  # a batch back each time: never stalled
        book.mark_trained(pull(source, 10)[:BATCH])


def test_every_trained_batch_is_logged_with_its_question_ids(tmp_path):
    log = tmp_path / "logs" / "questions.jsonl"
    book = ledger(log_path=str(log))
    source = items(book)
    for _ in range(2):
        book.mark_trained(pull(source, BATCH))
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["step"] for x in lines] == [0, 1]
    assert all(len(x["questions"]) == BATCH for x in lines)
    assert {q for x in lines for q in x["questions"]} <= {r["id"] for r in ROWS}


def test_a_loader_state_it_did_not_write_is_refused():
    with pytest.raises(ValueError, match="QuestionLedger"):
        ledger().load_state_dict({"_num_yielded": 3})


def per_pass(trained: list[tuple[int, int | None]]) -> dict[int | None, list[int]]:
    out: dict[int | None, list[int]] = {}
    for i, p in trained:
        out.setdefault(p, []).append(i)
    return out


def test_read_ahead_across_a_pass_end_counts_each_question_to_its_own_pass():
    book = ledger(prefetch=2)
    source = items(book)
    handed = pull(source, 12)  # pass 0 (10 questions) and 2 read ahead of pass 1
    straggler = handed[9]  # the last of pass 0 finishes after the read-ahead
    finished = handed[:9] + handed[10:12] + [straggler]
    trained = []
    for k in range(0, 12, BATCH):
        batch = finished[k : k + BATCH]
        trained += zip(batch, book.mark_trained(batch), strict=True)
    passes = per_pass(trained)
    assert sorted(passes[0]) == list(range(10))  # pass 0: each once, none skipped
    assert passes[1] == handed[10:12]
    assert book.untrained() == []


def test_a_checkpoint_across_a_pass_end_replays_each_question_in_its_own_pass(
    tmp_path,
):
    log = tmp_path / "questions.jsonl"
    first = ledger(prefetch=2, log_path=str(log))
    source = items(first)
    handed = pull(source, 12)
    for k in range(0, 8, BATCH):  # 8 of pass 0 trained; 2 of it and 2 of pass 1 out
        first.mark_trained(handed[k : k + BATCH])
    first.mark_trained([handed[10], handed[8]])  # one of each pass
    state = pickle.loads(pickle.dumps(first.state_dict()))  # the crash
    assert sorted(map(tuple, state["outstanding"])) == sorted(
        [(handed[9], 0), (handed[11], 1)]
    )

    second = ledger(prefetch=2, log_path=str(log))
    second.load_state_dict(state)
    source = items(second)
    rest = pull(source, 10)  # the two replayed, then the rest of pass 1
    assert rest[:2] == [handed[9], handed[11]]
    for k in range(0, 10, BATCH):
        second.mark_trained(rest[k : k + BATCH])
    second.log_untrained()
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    trained = [
        (q, p) for x in lines if "questions" in x
        for q, p in zip(x["questions"], x["passes"], strict=True)
    ]  # fmt: skip
    passes = per_pass(trained)
    ids = sorted(r["id"] for r in ROWS)
    assert sorted(passes[0]) == sorted(passes[1]) == ids  # each pass: all, once
    assert lines[-1] == {"step": 10, "untrained": []}


def test_questions_left_out_at_the_end_of_a_run_are_listed_with_their_pass(tmp_path):
    log = tmp_path / "questions.jsonl"
    book = ledger(prefetch=2, log_path=str(log))
    source = items(book)
    handed = pull(source, 12)
    done = handed[:9] + handed[10:11]  # AReaL's epoch: one read ahead, one late
    for k in range(0, 10, BATCH):
        book.mark_trained(done[k : k + BATCH])
    book.log_untrained()
    last = json.loads(log.read_text().splitlines()[-1])
    q = [ROWS[i]["id"] for i in handed]
    assert last == {"step": 5, "untrained": [[q[9], 0], [q[11], 1]]}

"""The memory carries across turns: trained at 2 chunks, it holds at 8x that length,
and the same checkpoint with its memory wiped before every turn does not.

One CPU main-job run (``config_cpu.yaml``: the needle task with distractors at
``standin.needle_chunks`` = 2, AReaL's PPOTrainer, ``MemAgentWorkflow``, the
stand-in, a disk weight update every step) in the one-process SPMD mode, whose
end-of-run length eval (``standin/length_eval.py``) runs ``examples/eval.py``
on held-out questions of 1 and 16 chunks for the trained checkpoint, the warm
start and the trained checkpoint with ``memagent.wipe_memory=true``.

Seeds and margins: see MEASURED below. The trained row must clear chance by
MARGIN at 1 chunk and at 16 chunks (8x the training length); the warm start
and the memory-wiped row must stay below chance + CONTROL (64 questions give a
standard error of 0.054 at chance).

Mutations tried on this test (each made red, then reverted): every turn given
the initial memory instead of the one just written (the trained row falls to
chance), and the last chunk skipped (at 1 chunk the needle is never read).
"""

import json

import pytest

from bench.learning import CHANCE, build_model, train_run

SEED = 0
STEPS = 50
LENGTHS = (1, 16)
MARGIN = 0.45  # trained: >= chance + this at every evaluated length
CONTROL = 0.15  # warm start and memory wiped: < chance + this at every length
FAST = (
    "scheduler.type=null",  # one process: no worker start-up
    f"total_train_steps={STEPS}",
    f"saver.freq_steps={STEPS}",
    "evaluator.freq_steps=10",
    "recover.mode=disabled",
    f"standin.length_eval=[{','.join(map(str, LENGTHS))}]",
    "standin.length_eval_wiped=true",
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("length")
    model = build_model(out / "model", SEED)
    result = train_run(out / "run", model, SEED, SEED + 1, overrides=FAST)
    table_file = next((out / "run" / "areal").rglob("length_table.json"))
    assert (
        table_file.parent == next((out / "run" / "areal").rglob("steps.jsonl")).parent
    )
    return result["steps"], json.loads(table_file.read_text())


def test_the_run_trained_every_step_on_two_chunk_documents(run):
    steps, table = run
    assert [s["step"] for s in steps] == list(range(1, STEPS + 1))
    # 16 questions x 8 episodes x (2 memory turns + the final answer)
    assert all(s["rows"] == 384 for s in steps)
    assert table["train_chunks"] == 2
    assert table["chunks"] == list(LENGTHS)


def test_the_trained_memory_holds_at_eight_times_the_training_length(run):
    _, table = run
    for n, acc in zip(table["chunks"], table["trained"], strict=True):
        assert acc >= CHANCE + MARGIN, (n, table)


@pytest.mark.parametrize("row", ["warm_start", "memory_wiped"])
def test_the_controls_stay_at_chance(run, row):
    _, table = run
    assert all(acc < CHANCE + CONTROL for acc in table[row]), table

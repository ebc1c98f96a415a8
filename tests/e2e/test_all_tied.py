"""Steps in which every group ties, with ``memagent.skip_tied_groups``: AReaL's
real loop (one-process SPMD) still trains, syncs weights and advances the version."""

import json
import shutil
import urllib.request

import pytest

from bench.learning import config_value
from memagent_workflow.workflow import MemAgentWorkflow
from standin.launch import StandinServer
from tests.e2e.launch_runs import run_one_process

QUESTIONS = config_value("train_dataset.batch_size")
GROUP = config_value("memagent.group_size")
# a memory turn per chunk and the answer turn, per episode
ROWS_PER_GROUP = (config_value("standin.needle_chunks") + 1) * GROUP


class AllTiedWorkflow(MemAgentWorkflow):
    """Every episode earns 0: every group ties."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reward_fn = lambda answer, answers: 0.0


@pytest.fixture(scope="module")
def run(needle_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("all_tied")
    model = out / "model"
    shutil.copytree(needle_model_dir, model)
    with StandinServer(model, seed=0, log_file=out / "server.log") as server:
        run_one_process(
            ["-m", "bench.learning_run", "--workflow",
             "tests.e2e.test_all_tied.AllTiedWorkflow"],
            out, model, server.addr, "memagent.skip_tied_groups=true",
        )  # fmt: skip
        with urllib.request.urlopen(f"{server.url}/weights_digest", timeout=30) as r:
            state = json.loads(r.read())
    log_dir = next((out / "areal").rglob("steps.jsonl")).parent
    steps = [json.loads(s) for s in (log_dir / "steps.jsonl").read_text().splitlines()]
    ledger = [
        json.loads(s) for s in (log_dir / "questions.jsonl").read_text().splitlines()
    ]
    return dict(steps=steps, state=state, ledger=ledger)


def test_every_step_counts_every_group_tied_and_trains_one(run):
    assert [s["step"] for s in run["steps"]] == [1, 2]
    for s in run["steps"]:
        assert s["groups"] == s["tied_groups"] == QUESTIONS
        assert s["rows_tied"] == QUESTIONS * ROWS_PER_GROUP
        assert s["rows"] == ROWS_PER_GROUP  # the one group kept for the update
        assert s["rows_skipped"] == (QUESTIONS - 1) * ROWS_PER_GROUP
        assert s["actor_loss"] == 0.0  # advantage 0, no KL (kl_ctl 0)


def test_weights_reach_the_server_and_the_version_advances(run):
    assert run["state"]["n_updates"] == 2
    second = run["steps"][1]
    assert second["oldest_rollout_version"] == 1
    assert second["staleness_max"] == 0


def test_the_ledger_counts_every_question_trained(run):
    trained = [line for line in run["ledger"] if "questions" in line]
    assert [len(line["questions"]) for line in trained] == [QUESTIONS, QUESTIONS]

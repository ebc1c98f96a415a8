"""The CPU main job in one-process SPMD mode, 2 steps: weight updates reach the server,
and steps in which every group ties still train, sync and advance the version.

The single-controller and Ray launches of the same job: test_train_launch.py.
``/weights_digest`` and ``n_updates`` (weight syncs received) are stand-in only.
The run trains with the original MemAgent's KL loss, as docs/algorithm.md's
command turns it on (``actor.kl_loss_coef``; AReaL's reward KL stays off), so the
product's trainer builds a reference model of its own (in the actor's class, the
stand-in's on CPU). Every episode earns 0 (``no_reward``, given by import string
as a user's reward is) and ``memagent.skip_tied_groups`` is on: AReaL's loop must
still train the one group kept, with weight decay changing every weight, so the
served weights tell one version from another, and the policy leaves the reference.
"""

import json
import math
import shlex
import shutil
import urllib.request

import pytest
import torch
from transformers import AutoModelForCausalLM

from bench.learning import config_value
from standin.launch import StandinServer
from standin.model import weights_digest
from tests.e2e.launch_runs import ROOT, run_one_process

QUESTIONS = config_value("train_dataset.batch_size")
GROUP = config_value("memagent.group_size")
# a memory turn per chunk and the answer turn, per episode
ROWS_PER_GROUP = (config_value("standin.needle_chunks") + 1) * GROUP
TIED = (
    f"memagent.reward={__name__}.no_reward",
    "memagent.skip_tied_groups=true",
)
WEIGHT_DECAY = 30.0
# The KL of a policy equal to its reference: 0 up to float rounding. Measured:
# exactly 0.0 at step 1; 6.4e-8 at step 2 with WEIGHT_DECAY 30 (8.8e-15 with 0.01).
KL_AT_REFERENCE = 1e-12


def no_reward(response: str, golds: list[str]) -> float:
    """Every episode earns 0: every group ties."""
    return 0.0


def kl_loss_overrides() -> list[str]:
    """The overrides of docs/algorithm.md's CPU command for the original's KL loss."""
    text = (ROOT / "docs" / "algorithm.md").read_text()
    line = next(x for x in text.splitlines() if "kl_loss_coef" in x and "uv run" in x)
    head = "uv run python -m standin.train --config config_cpu.yaml "
    assert line.startswith(head), line
    return shlex.split(line[len(head) :])


def get(server, path):
    with urllib.request.urlopen(f"{server.url}{path}", timeout=30) as r:
        return json.loads(r.read())


def digest_of(path) -> str:
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    return weights_digest(model)


@pytest.fixture(scope="module")
def run(needle_model_dir, tmp_path_factory):
    """Two GRPO steps of config_cpu.yaml against a server the test owns."""
    out = tmp_path_factory.mktemp("train_cpu")
    model = out / "model"
    shutil.copytree(needle_model_dir, model)
    initial = digest_of(model)
    with StandinServer(model, seed=0, log_file=out / "server.log") as server:
        run_one_process(
            ["-m", "standin.train"], out, model, server.addr,
            # every step changes every weight, even if every group ties: at step
            # 2's lr (5e-5) each update shrinks them by 0.15%, so the KL shows it
            f"actor.optimizer.weight_decay={WEIGHT_DECAY}", *kl_loss_overrides(), *TIED,
        )  # fmt: skip
        state = get(server, "/weights_digest")
    log_dir = next((out / "areal").rglob("steps.jsonl")).parent
    steps, ledger = (
        [json.loads(s) for s in (log_dir / name).read_text().splitlines()]
        for name in ("steps.jsonl", "questions.jsonl")
    )
    checkpoint = next((out / "areal").rglob("checkpoints/**/config.json")).parent
    return dict(
        initial=initial, state=state, steps=steps, checkpoint=checkpoint, ledger=ledger
    )


def test_the_server_serves_exactly_the_weights_the_actor_saved(run):
    assert run["state"]["digest"] == digest_of(run["checkpoint"])
    assert run["state"]["digest"] != run["initial"]


def test_latest_names_the_checkpoint_the_run_saved(run):
    # the trial's checkpoint folder: <trial>/default/epoch..globalstep1 (the
    # second step's, counted from 0) and <trial>/latest, which names it
    latest = run["checkpoint"].parent.parent / "latest"
    assert latest.resolve() == run["checkpoint"].resolve()
    assert run["checkpoint"].name.endswith("globalstep1")


def test_one_disk_weight_update_per_step(run):
    assert run["state"]["n_updates"] == 2
    assert [s["step"] for s in run["steps"]] == [1, 2]


def test_step_two_trajectories_carry_the_new_version(run):
    first, second = run["steps"]
    assert first["oldest_rollout_version"] == 0
    assert second["oldest_rollout_version"] == 1
    assert second["staleness_max"] == 0
    assert all(s["rows"] > 0 for s in run["steps"])


def test_every_step_counts_every_group_tied_and_trains_one(run):
    for s in run["steps"]:
        assert s["groups"] == s["tied_groups"] == QUESTIONS
        assert s["rows_tied"] == QUESTIONS * ROWS_PER_GROUP
        assert s["rows"] == ROWS_PER_GROUP  # the one group kept for the update
        assert s["rows_skipped"] == (QUESTIONS - 1) * ROWS_PER_GROUP
        assert s["actor_loss"] == 0.0  # advantage 0 (the KL loss is logged apart)


def test_the_ledger_counts_every_question_trained(run):
    trained = [line for line in run["ledger"] if "questions" in line]
    assert [len(line["questions"]) for line in trained] == [QUESTIONS, QUESTIONS]


def test_the_kl_to_the_reference_starts_at_zero_and_grows(run):
    """Step 1 trains at lr 0 (the warm-up's first step): the policy is the
    reference throughout it, so a working reference gives a KL of 0; weight
    decay then moves the policy away. A reference that was the actor itself
    would stay at 0; one computing otherwise (attention, temperature) would not
    start there."""
    first, second = run["steps"]
    assert first["lr"] == 0 and second["lr"] > 0
    assert 0 <= first["kl_loss"] <= KL_AT_REFERENCE
    assert math.isfinite(second["kl_loss"])
    assert second["kl_loss"] > 1000 * KL_AT_REFERENCE

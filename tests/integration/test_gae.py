"""The README's central claim, on AReaL's own code: GAE with γ = λ = 1 and zero
values gives every generated token of a row exactly that row's advantage.

Rows come from MemAgentWorkflow (scripted engine, two questions, so AReaL pads
two trajectories of different widths into one batch); the advantages come from
AReaL's PPOActor.compute_advantages with the actor section of config.yaml (the
GPU recipe), KL off (``kl_ctl`` 0; with KL on, each token also gets the KL
penalty of the tokens after it). Which tokens are generated is taken from the
engine's record of each call, not from the rows.
"""

import asyncio
from pathlib import Path

import pytest
import torch
from areal.trainer.ppo.actor import PPOActor

from examples.train import load_config
from tests.builders import make_workflow
from tests.fakes import FakeEngine, MemoryScript

GROUP = 3
CHUNK = 24
MEMORY = 12
ROOT = Path(__file__).resolve().parents[2]
ANSWERS = ["\\boxed{river}", "\\boxed{lake}", "no box"]  # rewards 1, 0, 0
ADVANTAGE = {0: 2 / 3, 1: -1 / 3, 2: -1 / 3}
QUESTIONS = [
    {
        "id": f"q{n}",
        "question": question,
        "context": " ".join(f"Fact {i}: river {i} flows north." for i in range(n)),
        "answers": ["river"],
    }
    for n, question in ((8, "Which river?"), (20, "Which river runs by the mill?"))
]


@pytest.fixture(scope="module")
def actor_config(tmp_path_factory):
    root = tmp_path_factory.mktemp("gae")
    cfg = load_config(
        ["--config", str(ROOT / "config.yaml"), f"cluster.fileroot={root}"]
    )
    actor = cfg.actor
    # the recipe leaves the workflow's advantage alone ...
    assert actor.reward_norm is None and actor.adv_norm is None
    assert (actor.discount, actor.gae_lambda) == (1.0, 1.0)
    assert (actor.reward_scaling, actor.reward_bias) == (1.0, 0.0)
    actor.kl_ctl = 0.0  # ... up to the KL penalty, switched off here
    return actor


def rollout(tokenizer, item):
    n = len(tokenizer.encode(item["context"], add_special_tokens=False))
    n_chunks = -(-n // CHUNK)
    engine = FakeEngine(script=MemoryScript(tokenizer, n_chunks, ANSWERS, MEMORY))
    wf = make_workflow(
        tokenizer,
        max_tokens=2048,
        chunk_tokens=CHUNK,
        max_memory_tokens=MEMORY,
        max_final_tokens=16,
        group_size=GROUP,
    )
    return asyncio.run(wf.arun_episode(engine, item)), engine


def test_every_generated_token_gets_its_rows_advantage(tokenizer, actor_config):
    rollouts = [rollout(tokenizer, item) for item in QUESTIONS]
    widths = [traj["input_ids"].shape[1] for traj, _ in rollouts]
    assert widths[0] != widths[1]  # AReaL pads them into one batch
    batch = [{k: v.clone() for k, v in traj.items()} for traj, _ in rollouts]
    out = PPOActor(actor_config, engine=None).compute_advantages(batch)
    checked = 0
    for (traj, engine), res in zip(rollouts, out, strict=True):
        calls = {tuple(c.input_ids + c.output_ids): c for c in engine.calls}
        assert len(calls) == traj["input_ids"].shape[0]
        for r in range(traj["input_ids"].shape[0]):
            n = int(traj["attention_mask"][r].sum())
            call = calls[tuple(traj["input_ids"][r, :n].tolist())]
            p = len(call.input_ids)
            # AReaL's position t scores token t + 1: the generated tokens are
            # predicted from positions p - 1 .. n - 2, and only from those.
            want_mask = torch.zeros(res["loss_mask"].shape[1])
            want_mask[p - 1 : n - 1] = 1
            assert torch.equal(res["loss_mask"][r], want_mask), (r, p, n)
            adv = res["advantages"][r] * res["loss_mask"][r]
            want = want_mask * ADVANTAGE[call.episode]
            assert torch.allclose(adv, want, atol=1e-6, rtol=0), (r, call.turn)
            checked += n - p
    # every generated token was checked, those of the batch's widest rows too
    # (no padding: AReaL's "no EOS" case, zeroed if mask_no_eos_with_zero)
    assert checked == sum(len(c.output_ids) for _, e in rollouts for c in e.calls)

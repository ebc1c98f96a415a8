"""The real AReaL path on CPU: RemoteSGLangEngine + WorkflowExecutor against the
stand-in server, then AReaL's FSDP actor recomputing and training on the rows."""

import pytest
import torch
from areal.api.cli_args import (
    GenerationHyperparameters,
    InferenceEngineConfig,
    MicroBatchSpec,
    OptimizerConfig,
    PPOActorConfig,
)
from areal.api.io_struct import FinetuneSpec
from areal.engine.sglang_remote import RemoteSGLangEngine
from areal.infra.workflow_executor import check_trajectory_format

from memagent_workflow.data.synthetic import make_synthetic
from memagent_workflow.workflow import load_tokenizer
from standin.launch import find_free_port as free_port

GROUP = 3
CHUNK = 96
MEMORY = 12
TEMPERATURE = 1.0


@pytest.fixture(scope="module")
def items():
    return make_synthetic(2, seed=5, num_docs=4)


@pytest.fixture(scope="module")
def trajectories(standin_server, tiny_model_dir, items):
    config = InferenceEngineConfig(
        backend="sglang:d1",
        consumer_batch_size=len(items),
        max_concurrent_rollouts=len(items),
        max_head_offpolicyness=0,
        check_trajectory_format=True,
        setup_timeout=60,
        request_timeout=120,
    )
    engine = RemoteSGLangEngine(config)
    engine.initialize(addr=standin_server.addr, train_data_parallel_size=1)
    try:
        trajs = engine.rollout_batch(
            items,
            workflow="memagent_workflow.workflow.MemAgentWorkflow",
            workflow_kwargs=dict(
                gconfig=GenerationHyperparameters(
                    max_tokens=1024, temperature=TEMPERATURE
                ),
                tokenizer=str(tiny_model_dir),
                chunk_tokens=CHUNK,
                max_memory_tokens=MEMORY,
                max_final_tokens=MEMORY,
                group_size=GROUP,
            ),
        )
    finally:
        engine.destroy()
    return trajs


def n_chunks(tokenizer, item) -> int:
    n = len(tokenizer.encode(item["context"], add_special_tokens=False))
    return -(-n // CHUNK)


def test_one_trajectory_per_question_with_group_rows(
    trajectories, items, tiny_model_dir
):
    tokenizer = load_tokenizer(str(tiny_model_dir))
    assert len(trajectories) == len(items)
    row_counts = sorted(t["input_ids"].shape[0] for t in trajectories)
    expected = sorted(GROUP * (n_chunks(tokenizer, it) + 1) for it in items)
    assert row_counts == expected
    for traj in trajectories:
        assert check_trajectory_format(traj)
        rows = traj["input_ids"].shape[0]
        per_episode = rows // GROUP
        adv = traj["rewards"].view(GROUP, per_episode)
        assert (adv == adv[:, :1]).all()
        assert abs(float(adv[:, 0].sum())) < 1e-5  # centred within the group


def test_rows_carry_server_tokens_logprobs_and_version_zero(trajectories):
    for traj in trajectories:
        gen = traj["loss_mask"].bool()
        assert gen.any(dim=1).all()
        assert (traj["versions"][gen] == 0).all()
        assert (traj["versions"][traj["attention_mask"] & ~gen] == -1).all()
        assert (traj["logprobs"][gen] <= 0).all()
        memory_rows = traj["loss_mask"].sum(dim=1)
        assert memory_rows.max() <= MEMORY


@pytest.fixture(scope="module")
def actor(tiny_model_dir):
    from areal.engine.fsdp_engine import FSDPPPOActor

    from standin.packed_sdpa import install_packed_sdpa

    install_packed_sdpa()  # CPU: make sdpa respect AReaL's packed micro-batches

    # The process group's environment, for this module only.
    env = pytest.MonkeyPatch()
    for key, value in dict(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(free_port()),
        RANK="0",
        LOCAL_RANK="0",
        WORLD_SIZE="1",
    ).items():
        env.setenv(key, value)
    config = PPOActorConfig(
        experiment_name="memagent-test",
        trial_name="actor",
        path=str(tiny_model_dir),
        backend="fsdp:d1",
        attn_impl="sdpa",
        dtype="float32",
        gradient_checkpointing=False,
        mb_spec=MicroBatchSpec(max_tokens_per_mb=4096),
        optimizer=OptimizerConfig(
            lr=1e-2, weight_decay=0.0, warmup_steps_proportion=0.0
        ),
        temperature=TEMPERATURE,
        kl_ctl=0.0,
        reward_norm=None,
        adv_norm=None,
        ppo_n_minibatches=1,
        recompute_logprob=True,
        use_decoupled_loss=True,
    )
    actor = FSDPPPOActor(config)
    actor.create_process_group()
    actor.initialize(
        None, FinetuneSpec(total_train_epochs=1, dataset_size=4, train_batch_size=2)
    )
    yield actor
    actor.destroy()
    env.undo()


def test_actor_recomputes_the_servers_logprobs(actor, trajectories):
    batch = [{k: v.clone() for k, v in t.items()} for t in trajectories]
    recomputed = actor.compute_logp(batch)
    for traj, logp in zip(trajectories, recomputed, strict=True):
        # the actor's value at position i is the logprob of token i + 1
        target = traj["logprobs"][:, 1:]
        mask = traj["loss_mask"][:, 1:].bool()
        diff = (logp[:, : target.shape[1]] - target)[mask]
        assert mask.sum() > 0
        assert diff.abs().max() < 1e-4, diff.abs().max()


def test_one_ppo_update_is_finite_and_moves_the_weights(actor, trajectories):
    from areal.utils import stats_tracker

    batch = [{k: v.clone() for k, v in t.items()} for t in trajectories]
    for traj, logp in zip(batch, actor.compute_logp(batch), strict=True):
        traj["prox_logp"] = logp
        # a random tiny model rarely answers right: give episodes distinct
        # advantages so the update has a gradient to follow
        per_episode = traj["rewards"].shape[0] // GROUP
        traj["rewards"] = torch.tensor([1.0, -0.5, -0.5]).repeat_interleave(per_episode)
    before = [p.detach().clone() for p in actor.model.parameters()]
    stats_tracker.export_all(reset=True)
    batch = actor.compute_advantages(batch)
    for traj, rows in zip(batch, trajectories, strict=True):
        # the README's claim on the real rows: position t scores token t + 1, and
        # every generated token carries its row's advantage; nothing else is scored
        assert torch.equal(traj["loss_mask"][:, :-1], rows["loss_mask"][:, 1:].float())
        assert not traj["loss_mask"][:, -1].any()
        mask = traj["loss_mask"].bool()
        row_adv = traj["rewards"][:, None].expand_as(mask)
        assert torch.allclose(traj["advantages"][mask], row_adv[mask], atol=1e-6)
    actor.ppo_update(batch)
    stats = stats_tracker.export_all(reset=True)
    losses = [
        v
        for k, v in stats.items()
        if k.endswith("actor_loss/avg") or k.endswith("actor_loss")
    ]
    assert losses and all(torch.isfinite(torch.tensor(v)) for v in losses)
    after = list(actor.model.parameters())
    changed = sum(
        not torch.equal(b, a.detach()) for b, a in zip(before, after, strict=True)
    )
    assert changed > 0

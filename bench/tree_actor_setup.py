"""The tiny actors and batches that tests/integration/test_tree_training.py and
bench/tree_bench.py share: one actor config, packed or tree, and a group's rows
with what a PPO update reads."""

from __future__ import annotations

from typing import Any

import torch
from areal.api.cli_args import MicroBatchSpec, OptimizerConfig

from bench.tree_rows import Shape, group_batch
from memagent_workflow.actor_config import MemAgentActorConfig


def actor_config(path: str, tree: bool, padding: str = "block") -> MemAgentActorConfig:
    """A one-process actor on the tiny model: tries when ``tree`` (padded as
    ``actor.tree_padding=padding``), else packed rows; lr 0, so an update leaves
    the weights as they were."""
    return MemAgentActorConfig(
        experiment_name="memagent-test",
        trial_name=f"tree-{padding}" if tree else "packed",
        path=path,
        backend="fsdp:d1",
        attn_impl="sdpa",
        dtype="float32",
        gradient_checkpointing=False,
        mb_spec=MicroBatchSpec(max_tokens_per_mb=1024),
        pad_to_maximum=tree,  # AReaL's tree packing requires it
        enable_tree_training=tree,
        tree_padding=padding,
        # lr 0: the update computes its gradients and leaves the weights as
        # they were, so every case starts from the same model
        optimizer=OptimizerConfig(
            lr=0.0, weight_decay=0.0, warmup_steps_proportion=0.0, gradient_clipping=1e9
        ),
        kl_ctl=0.0,
        kl_loss_coef=0.1,
        reward_norm=None,
        adv_norm=None,
        ppo_n_minibatches=1,
        recompute_logprob=True,
        use_decoupled_loss=True,
    )


def built_actor(config: MemAgentActorConfig, seed: int = 0) -> Any:
    """The project's actor (`standin.actor.StandinPPOActor`) on ``config``, its
    process group made and its engine initialised; ``seed`` fixes what PEFT
    draws (a LoRA adapter's lora_A). The caller calls ``destroy()``."""
    from areal.api.io_struct import FinetuneSpec

    from standin.actor import StandinPPOActor

    torch.manual_seed(seed)
    actor = StandinPPOActor(config)
    actor.create_process_group()
    actor.initialize(
        None, FinetuneSpec(total_train_epochs=1, dataset_size=4, train_batch_size=2)
    )
    return actor


def batch_of(shape: Shape, order: str) -> dict[str, torch.Tensor]:
    """A group's rows with what a PPO update reads (logprobs, rewards, ...)."""
    data = group_batch(shape, order, seed=7)
    g = torch.Generator().manual_seed(11)
    rows, width = data["input_ids"].shape
    gen = data["loss_mask"].bool()
    data["logprobs"] = torch.where(gen, -torch.rand(rows, width, generator=g), 0.0)
    data["versions"] = torch.where(gen, 0, -1).to(torch.int32)
    per_episode = shape.turns + 1
    reward = torch.randn(shape.group, generator=g)
    data["rewards"] = reward.repeat_interleave(per_episode)
    return data

"""The original MemAgent's KL loss: value, gradient, place in AReaL's loss, config.

The reference below is written out token by token in plain Python (no torch):
``r = ref - logp``, ``k = exp(r) - r - 1`` clamped to 10 (its gradient w.r.t.
``logp`` is ``1 - exp(r)``, or 0 where the clamp acts), averaged over the
loss-mask tokens of all rows.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from areal.api.cli_args import PPOActorConfig
from areal.engine import FSDPPPOActor
from areal.infra.rpc.serialization import deserialize_value, serialize_value
from areal.trainer.ppo.actor import PPOActor, grpo_loss_fn
from areal.utils import stats_tracker

from memagent_workflow.actor_config import MemAgentActorConfig
from memagent_workflow.trainer.actor import MemAgentPPOActor
from memagent_workflow.trainer.kl_loss import kl_loss, low_var_kl, with_kl_loss
from memagent_workflow.trainer.ppo_trainer import (
    MemAgentPPOTrainer,
    check_kl_loss_config,
)
from standin.train import load_config

ROOT = Path(__file__).resolve().parents[2]

# Three rows of 6, 3 and 4 tokens (padded to 6), each token (logp, ref, in mask).
# r = ref - logp: 0.5, -2, 2.5 (k 8.68, under 10), 2.7 (k 11.18: clamped),
# -15 (k 14: clamped), 100 (overflows exp: clamped), a token outside the mask,
# 0; padding with values that would be large or NaN-prone if they leaked in.
ROWS = [
    [(-1.0, -0.5, 1), (-0.3, -2.3, 1), (-3.0, -0.5, 1), (-2.9, -0.2, 1),
     (-0.1, -15.1, 1), (-101.0, -1.0, 1)],
    [(-0.7, -4.0, 0), (-1.2, -1.2, 1), (-0.4, -3.9, 1)],
    [(-2.0, -1.0, 0), (-0.5, -0.6, 1), (-8.0, 0.0, 0), (-1.5, -0.9, 1)],
]  # fmt: skip
PAD = (-50.0, 60.0, 0)


def reference(rows, clamp: float = 10.0):
    """Loss and d loss / d logp per token, in plain Python."""
    n = sum(m for row in rows for _, _, m in row)
    loss, grads = 0.0, []
    for row in rows:
        g = []
        for logp, ref, m in row:
            r = ref - logp
            k = math.exp(min(r, 700.0)) - r - 1.0
            if not m:
                g.append(0.0)
            elif k >= clamp:
                loss += clamp
                g.append(0.0)
            else:
                loss += k
                g.append((1.0 - math.exp(r)) / n)
        grads.append(g)
    return loss / n, grads


def padded(rows, width: int = 6):
    cols = [[*row, *[PAD] * (width - len(row))] for row in rows]
    logp, ref, mask = (
        torch.tensor([[t[i] for t in row] for row in cols], dtype=torch.float64)
        for i in range(3)
    )
    return logp.float().requires_grad_(), ref.float(), mask.bool()


def test_value_and_gradient_match_the_reference():
    logp, ref, mask = padded(ROWS)
    loss, per_token = kl_loss(logp, ref, mask)
    loss.backward()
    want, grads = reference(ROWS)
    assert loss.item() == pytest.approx(want, rel=1e-6)
    for i, row in enumerate(grads):
        assert logp.grad[i, : len(row)].tolist() == pytest.approx(row, abs=1e-7)
        assert logp.grad[i, len(row) :].abs().sum() == 0  # padding: no gradient
    assert torch.isfinite(logp.grad).all()
    # the per-token values (the logged stat) are the clamped k3 on mask tokens
    assert per_token[0].tolist() == pytest.approx(
        [math.exp(0.5) - 1.5, math.exp(-2) + 1, math.exp(2.5) - 3.5, 10, 10, 10],
        rel=1e-6,
    )


def test_the_clamp_acts_at_its_bound_only():
    want, _ = reference(ROWS, clamp=12.0)  # r = 2.7 (11.18) no longer clamped
    logp, ref, mask = padded(ROWS)
    assert kl_loss(logp, ref, mask, clamp=12.0)[0].item() == pytest.approx(want)
    r = torch.tensor([-40.0, -11.5, -10.0, 0.0, 2.5, 2.7, 3.0, 200.0])
    k = low_var_kl(torch.zeros_like(r), r)
    direct = (torch.exp(r.double()) - r.double() - 1).clamp(max=10).float()
    assert torch.allclose(k, direct) and k.max() == 10 and k.min() == 0


def test_a_policy_near_the_reference_keeps_its_small_kl():
    """Near r = 0 the k3 is about r^2 / 2; float32 exp(r) - r - 1 rounds it away."""
    r = torch.tensor([1e-4, -1e-4, 1e-3])
    k = low_var_kl(torch.zeros_like(r), r)
    assert k.tolist() == pytest.approx(
        [math.expm1(x) - x for x in r.tolist()], rel=1e-3
    )


def test_rows_packed_as_areal_packs_them_give_the_same_loss():
    logp, ref, mask = padded(ROWS)
    packed = [torch.cat([x[i, : len(r)] for i, r in enumerate(ROWS)]) for x in (
        logp.detach(), ref, mask)]  # fmt: skip
    assert kl_loss(*packed)[0].item() == pytest.approx(reference(ROWS)[0], rel=1e-6)


def packed_batch():
    """One packed micro-batch as AReaL's train step hands it to the loss."""
    logp, ref, mask = padded(ROWS)
    cat = [torch.cat([x[i, : len(r)] for i, r in enumerate(ROWS)]) for x in (
        logp.detach(), ref, mask)]  # fmt: skip
    current, ref_logp, loss_mask = cat
    gen = torch.Generator().manual_seed(0)
    old = current + 0.1 * torch.randn(current.shape, generator=gen)
    data = dict(
        logprobs=old, prox_logp=old.clone(), ref_logp=ref_logp, loss_mask=loss_mask,
        advantages=torch.randn(current.shape, generator=gen),
        cu_seqlens=torch.tensor([0, 6, 9, 13], dtype=torch.int32),
    )  # fmt: skip
    return current, data


GRPO = functools.partial(grpo_loss_fn, eps_clip=0.2, eps_clip_higher=None, c_clip=3.0)


def loss_and_grad(loss_fn, current, data):
    x = current.clone().requires_grad_()
    with stats_tracker.scope("ppo_actor"), stats_tracker.scope("update"):
        loss = loss_fn(x, torch.zeros_like(x), data)
    loss.backward()
    return loss.item(), x.grad.clone()


def test_the_full_loss_is_arealss_grpo_loss_plus_coef_times_kl():
    current, data = packed_batch()
    areal, areal_grad = loss_and_grad(GRPO, current, data)
    stats_tracker.export()
    coef = 0.25  # large, so that the KL part is well above float noise
    full, full_grad = loss_and_grad(with_kl_loss(GRPO, coef), current, data)
    stats = stats_tracker.export()
    want, grads = reference(ROWS)
    assert full == pytest.approx(areal + coef * want, rel=1e-6)
    ref_grad = torch.tensor([g for row in grads for g in row])  # packed order
    assert torch.allclose(full_grad, areal_grad + coef * ref_grad, atol=1e-7)
    # logged beside AReaL's policy loss: the token mean of the k3, no coefficient
    assert stats["ppo_actor/update/kl_loss/avg"] == pytest.approx(want, rel=1e-6)
    assert stats["ppo_actor/update/kl_loss/max"] == 10
    assert "ppo_actor/update/actor_loss/avg" in stats


def test_no_ref_logp_is_a_clear_error():
    current, data = packed_batch()
    del data["ref_logp"]
    with pytest.raises(ValueError, match="no ref_logp: set ref:"):
        loss_and_grad(with_kl_loss(GRPO, 0.001), current, data)
    stats_tracker.export()


@pytest.mark.parametrize("coef", [0.0, 0.001])
def test_the_actor_adds_the_kl_only_when_its_coefficient_is_set(monkeypatch, coef):
    seen = []
    monkeypatch.setattr(
        FSDPPPOActor, "train_batch", lambda self, i, f, w: seen.append(f) or {}
    )
    actor = object.__new__(MemAgentPPOActor)  # no model needed to route the loss
    actor.config = SimpleNamespace(kl_loss_coef=coef, kl_loss_clamp=10.0)
    actor.train_batch({}, GRPO, lambda x: 1)
    assert (seen[0] is GRPO) == (coef == 0)  # 0: AReaL's loss function, untouched
    current, data = packed_batch()
    areal = loss_and_grad(GRPO, current, data)[0]
    full = loss_and_grad(seen[0], current, data)[0]
    stats_tracker.export()
    assert full == pytest.approx(areal + coef * reference(ROWS)[0], rel=1e-6)


def test_reward_kl_is_zero_with_kl_ctl_zero():
    """AReaL's reward-side KL (kl_ctl) adds nothing when 0, ref_logp or not."""
    cfg = PPOActorConfig(
        experiment_name="e", trial_name="t", kl_ctl=0.0, kl_estimator="k3",
        use_decoupled_loss=False, recompute_logprob=False, adv_norm=None,
    )  # fmt: skip
    actor = PPOActor(cfg, engine=None)
    gen = torch.Generator().manual_seed(1)

    def batch(with_ref: bool) -> dict:
        data = dict(
            input_ids=torch.ones(2, 6, dtype=torch.long),
            attention_mask=torch.tensor([[1] * 6, [1] * 4 + [0] * 2]),
            loss_mask=torch.tensor([[0, 0, 1, 1, 1, 1], [0, 1, 1, 1, 0, 0]]),
            logprobs=-torch.rand(2, 6, generator=gen),
            rewards=torch.tensor([1.0, -0.5]),
        )
        if with_ref:
            data["ref_logp"] = -3 * torch.rand(2, 6, generator=gen)
        return data

    plain = actor._compute_advantages(batch(False))
    gen.manual_seed(1)
    kl = actor._compute_advantages(batch(True))
    assert torch.equal(kl["advantages"], plain["advantages"])
    assert kl["kl_rewards"].abs().sum() == 0


def config(tmp_path, *overrides, yaml: str = "config_cpu.yaml"):
    return load_config(["--config", yaml, f"cluster.fileroot={tmp_path}", *overrides])


def test_the_key_loads_from_yaml_and_overrides(tmp_path):
    text = (ROOT / "config_cpu.yaml").read_text()
    assert "  kl_loss_coef: 0.0\n" in text
    cfg = config(tmp_path)
    assert type(cfg.actor) is MemAgentActorConfig
    assert cfg.actor.kl_loss_coef == 0.0 and cfg.actor.kl_loss_clamp == 10.0
    assert config(tmp_path, "actor.kl_loss_coef=0.002").actor.kl_loss_coef == 0.002
    with pytest.raises(ValueError, match="kl_loss_coef must be >= 0"):
        config(tmp_path, "actor.kl_loss_coef=-0.001")
    # a YAML without the key: ++ adds it (Hydra's rule for keys the file lacks)
    yaml = tmp_path / "no_key.yaml"
    yaml.write_text(text.replace("  kl_loss_coef: 0.0\n", ""))
    assert config(tmp_path, yaml=str(yaml)).actor.kl_loss_coef == 0.0  # the default
    cfg = config(tmp_path, "++actor.kl_loss_coef=0.001", yaml=str(yaml))
    assert cfg.actor.kl_loss_coef == 0.001


def test_the_config_reaches_workers_as_its_own_class(tmp_path):
    """The single controller ships the actor config by value, its class by path."""
    cfg = config(tmp_path, "actor.kl_loss_coef=0.001").actor
    back = deserialize_value(serialize_value(cfg))
    assert type(back) is MemAgentActorConfig and back == cfg


def test_a_kl_loss_without_a_reference_model_is_refused():
    cfg = SimpleNamespace(
        actor=SimpleNamespace(kl_loss_coef=0.001, kl_ctl=0.0), ref=None
    )
    with pytest.raises(ValueError, match="kl_loss_coef=0.001 needs a reference model"):
        check_kl_loss_config(cfg)
    cfg.actor.kl_loss_coef = 0.0
    check_kl_loss_config(cfg)  # off: no reference model needed


class RecordingTrainEngine:
    """An engine class that records how the trainer builds and starts it."""

    built: list = []

    def __init__(self, config):
        self.config, self.calls = config, []

    @classmethod
    def in_process(cls, config, skip_tied_groups=False):
        engine = cls(config)
        cls.built.append(engine)
        return engine

    def create_process_group(self, parallel_strategy):
        self.calls.append(("process_group", parallel_strategy))

    def initialize(self, **kwargs):
        self.calls.append(("initialize", kwargs))


@pytest.mark.parametrize("coef,kl_ctl", [(0.001, 0.0), (0.0, 0.0)])
def test_the_trainer_adds_a_reference_model_for_the_kl_loss(monkeypatch, coef, kl_ctl):
    """The trainer's own engine building (not a mock of it) makes the reference:
    an ``actor_cls`` engine, as the actor is, from ``ref:``."""
    monkeypatch.setenv("AREAL_SPMD_MODE", "1")  # engines built in this process
    trainer = object.__new__(MemAgentPPOTrainer)
    ref_cfg = SimpleNamespace(backend="fsdp:d1")
    trainer.config = SimpleNamespace(
        actor=SimpleNamespace(kl_loss_coef=coef, kl_ctl=kl_ctl),
        ref=ref_cfg, perf_tracer=None,
        memagent=SimpleNamespace(skip_tied_groups=False),
    )  # fmt: skip
    trainer.ref, trainer._should_offload_ref = None, False
    trainer.recover_handler = SimpleNamespace(ft_spec="spec")
    trainer.actor_cls = RecordingTrainEngine
    RecordingTrainEngine.built = []
    trainer._add_kl_loss_ref()
    if coef == 0:
        assert trainer.ref is None and not RecordingTrainEngine.built  # AReaL's choice
        return
    assert RecordingTrainEngine.built == [trainer.ref]
    assert trainer.ref.config is ref_cfg
    (group, parallel), init = trainer.ref.calls
    assert group == "process_group" and parallel.dp_size == 1
    assert init == ("initialize", dict(addr=None, ft_spec="spec", role="ref"))
    trainer._add_kl_loss_ref()  # one there already (AReaL's, for kl_ctl > 0)
    assert len(RecordingTrainEngine.built) == 1

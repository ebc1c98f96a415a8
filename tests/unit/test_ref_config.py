"""The reference model computes log-probs as the actor does: every training config
ties ``ref:`` to the actor's temperature and attention, a load refuses a mismatch
while a KL term is on, and the KL loss's clamp must be positive."""

from __future__ import annotations

from pathlib import Path

import pytest

from examples.train import load_config
from standin.train import load_config as load_cpu_config

ROOT = Path(__file__).resolve().parents[2]
# The GPU training configs: config.yaml and the recipes (which read its ref:).
GPU = sorted(
    p.name
    for p in ROOT.glob("config*.yaml")
    if not p.name.startswith(("config_eval", "config_cpu"))
)


def load(tmp_path, name: str, *overrides: str):
    loader = load_cpu_config if name == "config_cpu.yaml" else load_config
    return loader(
        ["--config", str(ROOT / name), f"cluster.fileroot={tmp_path}", *overrides]
    )


@pytest.mark.parametrize("name", ["config_cpu.yaml", *GPU])
def test_the_reference_follows_the_actors_temperature_and_attention(tmp_path, name):
    cfg = load(
        tmp_path, name, "gconfig.temperature=0.7", "actor.attn_impl=eager",
        "actor.kl_loss_coef=0.001",
    )  # fmt: skip
    assert cfg.actor.temperature == 0.7  # the rollout's, as the actor trains at it
    assert (cfg.ref.temperature, cfg.ref.attn_impl) == (0.7, "eager")


def test_the_gpu_recipes_are_all_checked():
    assert "config.yaml" in GPU and len(GPU) >= 7


@pytest.mark.parametrize(
    "key, value", [("temperature", "0.5"), ("attn_impl", "flash_attention_2")]
)
def test_a_reference_computing_otherwise_is_refused_while_a_kl_term_is_on(
    tmp_path, key, value
):
    other = f"++ref.{key}={value}"  # ++: set even where a YAML lacks the key
    for kl in ("actor.kl_loss_coef=0.001", "actor.kl_ctl=0.001"):
        with pytest.raises(
            ValueError, match=rf"ref\.{key}=.* differs from actor\.{key}"
        ):
            load(tmp_path, "config_cpu.yaml", kl, other)
    # no KL term: the reference is not built, so nothing to compare
    cfg = load(tmp_path, "config_cpu.yaml", other)
    assert getattr(cfg.ref, key) != getattr(cfg.actor, key)


@pytest.mark.parametrize("clamp", ["0", "-1.0"])
def test_a_clamp_that_would_zero_the_kl_loss_is_refused(tmp_path, clamp):
    with pytest.raises(ValueError, match="actor.kl_loss_clamp must be > 0"):
        load(tmp_path, "config_cpu.yaml", "actor.kl_loss_coef=0.001",
             f"++actor.kl_loss_clamp={clamp}")  # fmt: skip


def test_an_unknown_way_to_cut_the_tries_minibatches_is_refused(tmp_path):
    with pytest.raises(
        ValueError, match="actor.tree_minibatches must be .groups., .dealt. or .runs."
    ):
        load(tmp_path, "config_cpu.yaml", "actor.tree_minibatches=halves")
    assert load(tmp_path, "config.yaml").actor.tree_minibatches == "groups"
    # the CPU job's two updates: dealt learned as packed where whole groups stalled
    assert load(tmp_path, "config_cpu.yaml").actor.tree_minibatches == "dealt"
    for cut in ("dealt", "runs"):
        cfg = load(tmp_path, "config_cpu.yaml", f"actor.tree_minibatches={cut}")
        assert cfg.actor.tree_minibatches == cut


def test_both_configs_pad_the_tries_to_the_block_and_take_the_maximum(tmp_path):
    for path in ("config.yaml", "config_cpu.yaml"):
        assert load(tmp_path, path).actor.tree_padding == "block"
    cfg = load(tmp_path, "config.yaml", "actor.tree_padding=maximum")
    assert cfg.actor.tree_padding == "maximum"
    with pytest.raises(ValueError, match="actor.tree_padding must be 'block' or"):
        load(tmp_path, "config.yaml", "actor.tree_padding=none")

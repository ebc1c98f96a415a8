"""The cost model with tree training (memagent_workflow/preflight/tree_ratio.py).

config_cpu.yaml with 2 chunks (3 turns), templates not counted (as in
test_preflight_projection.py): a memory turn's row is memory 3 + chunk 6 + new
3 = 12 tokens, the final turn's memory 3 + new 4 = 7; 8 episodes a group; one
group's episode turns packed: 8 x (12 + 12 + 7) = 248 tokens. As tries:
turn 1 shares its 9 prompt tokens (every memory the initial one): 9 + 8 x 3 = 33;
turn 2 shares the section first (6): 6 + 8 x 6 = 54, in the paper's order
nothing: 8 x 12 = 96; the final turn shares nothing: 8 x 7 = 56. Those are whole
groups (``actor.tree_minibatches=groups``); dealt over the 2 mini-batches each
turn is two tries of 4 rows: turn 1 2 x (9 + 4 x 3) = 42, turn 2 (section first)
2 x (6 + 4 x 6) = 60.
"""

from __future__ import annotations

import pytest

from memagent_workflow.preflight.projection import projection
from memagent_workflow.preflight.step import step_estimate
from memagent_workflow.preflight.tree_ratio import (
    SECTION_FIRST,
    token_share,
    turn_tokens,
)
from tests.unit.preflight_fakes import changed, load, run_of
from tests.unit.test_preflight_projection import measured

SECTION = (33 + 54 + 56) / 248
PAPER = (33 + 96 + 56) / 248
SECTION_DEALT = (42 + 60 + 56) / 248


@pytest.fixture(scope="module")
def cfg():
    return load(
        "config_cpu.yaml",
        "memagent.max_chunks=2",
        "actor.tree_minibatches=groups",
        "tokenizer_path=/nonexistent/tokenizer",
        "actor.path=/nonexistent/model",
    )


def test_a_turn_too_big_for_one_micro_batch_repeats_its_shared_part():
    assert turn_tokens(100, 10, 16, None) == 100 + 160
    # 40 tokens hold the shared 10 and 3 branches of 10: 6 tries, 6 copies
    assert turn_tokens(10, 10, 16, 40) == 6 * 10 + 160


def test_the_share_follows_the_prompt_order_and_the_group(cfg):
    run = run_of(cfg)
    assert token_share(run, "section_first") == pytest.approx(SECTION)
    assert token_share(run, "memory_first") == pytest.approx(PAPER)
    bigger = run_of(changed(cfg, memagent__group_size=16))
    assert token_share(bigger, "section_first") < SECTION  # more episodes share


def test_the_share_follows_the_minibatch_cut(cfg):
    def share(cut: str, minibatches: int = 2) -> float:
        run = run_of(
            changed(
                cfg, actor__tree_minibatches=cut, actor__ppo_n_minibatches=minibatches
            )
        )
        return token_share(run, "section_first")

    assert share("dealt") == pytest.approx(SECTION_DEALT)
    assert share("runs") == pytest.approx(SECTION)  # 3 turns, 2 mini-batches: whole
    assert share("runs", 4) == pytest.approx(SECTION_DEALT)  # a turn in 2 of the 4
    assert share("dealt", 8) == pytest.approx(1.0)  # one row of a turn per mini-batch
    assert share("groups", 8) == pytest.approx(SECTION)


def test_the_actor_computes_the_share_with_tree_training_on(cfg, tmp_path):
    rates = measured(tmp_path)
    packed = step_estimate(run_of(cfg, measured=rates))
    tree_cfg = changed(
        cfg,
        actor__enable_tree_training=True,
        actor__pad_to_maximum=True,
        memagent__prompts="prompts/needle_section_first.yaml",
    )
    tree = step_estimate(run_of(tree_cfg, measured=rates))
    assert tree.update_s == pytest.approx(packed.update_s * SECTION)
    assert tree.logp_s == pytest.approx(packed.logp_s * SECTION)
    assert "tree training, section_first" in tree.actor_how
    assert "not counted" not in tree.actor_how  # padded to the block: counted as none
    padded = changed(tree_cfg, actor__tree_padding="maximum")
    assert "padding to max_tokens_per_mb, not counted" in (
        step_estimate(run_of(padded, measured=rates)).actor_how
    )
    text = projection(run_of(tree_cfg, measured=rates)).describe()
    assert f"without tree training (packed): ~{packed.seconds:,.0f} s per step" in text


def test_a_measured_share_replaces_the_estimate(cfg, tmp_path):
    tree_cfg = changed(
        cfg, actor__enable_tree_training=True, actor__pad_to_maximum=True
    )
    packed = step_estimate(run_of(cfg, measured=measured(tmp_path)))
    rates = measured(tmp_path, "tree.json", tree_token_share=0.5)
    tree = step_estimate(run_of(tree_cfg, measured=rates))
    assert tree.update_s == pytest.approx(packed.update_s * 0.5)
    assert "50% of the row tokens (measured)" in tree.actor_how


def test_the_packed_runs_projection_shows_the_run_with_tree_training(cfg, tmp_path):
    run = run_of(cfg, measured=measured(tmp_path))
    found = projection(run)
    others = dict(found.others)
    step = found.step
    assert others[f"with {SECTION_FIRST}"] == pytest.approx(
        step.with_actor(SECTION).seconds
    )
    paper = "with actor.enable_tree_training=true actor.pad_to_maximum=true"
    assert others[paper] == pytest.approx(step.with_actor(PAPER).seconds)
    assert f"{SECTION_FIRST}: ~" in found.describe()

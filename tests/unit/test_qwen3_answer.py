"""Qwen3: the answer read after the last ``</think>``, by the training rewards
and the evaluation alike, and the workflow end to end on the hybrid Qwen3 with
thinking off and a final answer that thinks.

The tokenizer, the expected prompt format and its helpers are test_qwen3.py's.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from areal.utils import stats_tracker

from memagent_workflow.eval.scoring import eval_score
from memagent_workflow.reward import (
    answer_text,
    extract_answer,
    original_reward,
    reward_function,
    squad_reward,
)
from tests.builders import CHUNK_TOKENS, make_workflow
from tests.fakes import FakeEngine
from tests.unit.test_qwen3 import EMPTY_THINK_IDS, check_reply_start, ids_of

# ------------------------------------------------- the answer after </think>

GOLD = ["Paris"]
ANSWER_CASES = [
    # (final response, reward: the part a think block does not hide)
    ("\\boxed{Paris}", 1.0),
    ("<think>\nMaybe \\boxed{Lyon}.\n</think>\n\n\\boxed{Paris}", 1.0),
    ("<think>\nIt is \\boxed{Paris}.\n</think>\n\nThe memory does not say.", 0.0),
    ("<think>\n\\boxed{Paris}\n</think>\n\n\\boxed{Lyon}", 0.0),
    # Nothing after </think>: read whole, as the original evaluation does.
    ("<think>\nIt is \\boxed{Paris}.\n</think>", 1.0),
    # A think block never closed (cut by the budget): read whole, as well.
    ("<think>\nIt is \\boxed{Paris}", 1.0),
]
ANSWER_IS_CASES = [  # the same under answer_is (read by extract_answer)
    ("Therefore, the answer is Paris.", 1.0),
    ("<think>\nThe answer is Lyon?\n</think>\n\nTherefore, the answer is Paris.", 1.0),
    (
        "<think>\nTherefore, the answer is Paris.\n</think>\n\nThe memory does not say.",
        0.0,
    ),
    ("<think>\nthe answer is Paris\n</think>\n\nTherefore, the answer is Lyon.", 0.0),
]


def test_answer_text_is_the_text_after_the_last_think_tag():
    assert answer_text("<think>\na\n</think>\n\n b </think>\n\n c ") == "c"
    assert answer_text("  no tag  ") == "  no tag  "  # untouched: the verifier's
    assert answer_text("<think>x</think> \n") == "<think>x</think> \n"
    assert answer_text("") == ""


@pytest.mark.parametrize("response, reward", ANSWER_CASES)
def test_training_rewards_read_the_answer_after_the_think_block(response, reward):
    assert original_reward(response, GOLD) == reward
    assert squad_reward(response, GOLD) == reward
    assert eval_score(response, GOLD, "boxed") == reward  # one reading, both


@pytest.mark.parametrize("response, reward", ANSWER_IS_CASES)
def test_answer_is_rewards_read_the_answer_after_the_think_block(response, reward):
    assert reward_function("original", "answer_is")(response, GOLD) == reward
    assert reward_function("squad", "answer_is")(response, GOLD) == reward
    assert eval_score(response, GOLD, "answer_is") == reward


def test_the_300_character_window_applies_to_the_text_after_the_block():
    """The original verifier's window is the last 300 characters of the answer
    text; evaluation has no window."""
    tail = "\\boxed{Paris} " + "y" * 300  # the box is outside the last 300
    assert original_reward("<think>\nhm\n</think>\n\n" + tail, GOLD) == 0.0
    assert extract_answer("<think>\nhm\n</think>\n\n" + tail, "boxed") == "Paris"


# ----------------------------------------------- the workflow, end to end

CONTEXT = " ".join(f"Fact {i}: Alder lives in Brenna, near Paris." for i in range(8))
FINALS = [  # episode 0 answers right after its thinking, episode 1 only inside
    "<think>\nThe memory hints \\boxed{Lyon}.\n</think>\n\n\\boxed{Paris}",
    "<think>\nSurely \\boxed{Paris}.\n</think>\n\nI cannot tell.",
]


@pytest.mark.parametrize("build", ["tokens", "text"])
def test_workflow_prompts_and_reward_with_a_thinking_final_answer(
    qwen3_tokenizer, build
):
    """Every call's prompt ends with the one empty think block, which is prompt
    (loss mask 0), not trained; the final answer's think block is decoded with
    its tags and never scores."""
    tok = qwen3_tokenizer
    n_chunks = -(-len(ids_of(tok, CONTEXT)) // CHUNK_TOKENS)
    memory = ids_of(tok, " Alder lives near Paris.")

    def script(episode: int, turn: int) -> tuple[list[int], str]:
        out = ids_of(tok, FINALS[episode]) if turn == n_chunks else memory
        return out + [tok.eos_token_id], "stop"

    engine = FakeEngine(script=script)
    wf = make_workflow(tok, group_size=2, prompt_build=build)
    stats_tracker.get("rollout").export(reset=True)
    item = {"id": "q", "question": "Near which city?", "context": CONTEXT}
    traj = asyncio.run(wf.arun_episode(engine, dict(item, answers=GOLD)))
    assert len(engine.calls) == 2 * (n_chunks + 1) and n_chunks > 1
    for call in engine.calls:
        check_reply_start(call.input_ids, EMPTY_THINK_IDS)
    stats = stats_tracker.get("rollout").export(reset=True)
    assert stats["rollout/memagent/reward"] == 0.5  # 1 and 0, not 1 and 1
    assert sorted(set(traj["rewards"].tolist())) == [-0.5, 0.5]
    for row in range(traj["input_ids"].shape[0]):
        mask = traj["attention_mask"][row].bool()
        ids = traj["input_ids"][row][mask].tolist()
        loss = traj["loss_mask"][row][mask].tolist()
        n_out = int(sum(loss))
        assert ids[-n_out - 4 : -n_out] == EMPTY_THINK_IDS
        assert not any(loss[:-n_out]) and all(loss[-n_out:])
    finals = [c for c in engine.calls if c.turn == n_chunks]
    answers = [tok.decode(c.output_ids[:-1], skip_special_tokens=True) for c in finals]
    assert sorted(answers) == sorted(FINALS)  # "</think>" survives the decode
    assert np.mean([wf.reward_fn(a, GOLD) for a in answers]) == 0.5

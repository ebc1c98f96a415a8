"""MemAgentWorkflow against a scripted engine: rows, masks, memory, advantages.

Exact prompts turn by turn: test_episode.py; exact rows and metrics of a group:
test_group.py; the item's truncation, refusals and index: test_workflow_items.py.
"""

import asyncio

import pytest
import torch
from areal.infra.workflow_executor import check_trajectory_format
from areal.utils import stats_tracker

from tests.builders import CHUNK_TOKENS as CHUNK
from tests.builders import GROUP_SIZE as GROUP
from tests.builders import make_workflow
from tests.fakes import FakeEngine

CONTEXT = " ".join(f"Fact {i}: the river number {i} flows north." for i in range(60))
ITEM = {
    "id": "q1",
    "question": "Which river flows north?",
    "context": CONTEXT,
    "answers": ["river"],
}


def run(workflow, engine, item=ITEM):
    return asyncio.run(workflow.arun_episode(engine, item))


def answers(correct: set[int]):
    return lambda ep: "so \\boxed{river}" if ep in correct else "\\boxed{lake}"


@pytest.fixture(scope="module")
def n_chunks(tokenizer):
    n = len(tokenizer.encode(CONTEXT, add_special_tokens=False))
    return -(-n // CHUNK)


def test_one_row_per_turn_and_episode(tokenizer, n_chunks):
    traj = run(make_workflow(tokenizer), FakeEngine(tokenizer, answers({0})))
    assert n_chunks > 3
    assert traj["input_ids"].shape[0] == GROUP * (n_chunks + 1)
    assert traj["rewards"].shape == (GROUP * (n_chunks + 1),)
    assert check_trajectory_format(traj)


def test_prompt_tokens_are_masked_and_generated_tokens_carry_engine_data(tokenizer):
    engine = FakeEngine(tokenizer, answers({0}), version=7)
    traj = run(make_workflow(tokenizer), engine)
    for row in range(traj["input_ids"].shape[0]):
        mask = traj["attention_mask"][row]
        loss = traj["loss_mask"][row][mask].bool()
        n_out = int(loss.sum())
        assert n_out > 0 and loss[-n_out:].all() and not loss[:-n_out].any()
        versions = traj["versions"][row][mask]
        assert (versions[~loss] == -1).all() and (versions[loss] == 7).all()
        logp = traj["logprobs"][row][mask]
        assert (logp[~loss] == 0).all() and (logp[loss] < 0).all()
    # every request's tokens appear verbatim as the prompt part of a row
    prompts = {tuple(p) for _, p, _ in engine.requests}
    rows = {
        tuple(
            traj["input_ids"][r][
                traj["attention_mask"][r] & (traj["loss_mask"][r] == 0)
            ].tolist()
        )
        for r in range(traj["input_ids"].shape[0])
    }
    assert prompts == rows


def test_every_chunk_is_shown_once_in_order_and_the_final_prompt_has_none(
    tokenizer, n_chunks
):
    engine = FakeEngine(tokenizer, answers(set()))
    run(make_workflow(tokenizer, group_size=1), engine)
    texts = [tokenizer.decode(p) for _, p, _ in engine.requests]
    sections = [
        t.split("<section>\n", 1)[1].split("\n</section>", 1)[0] for t in texts[:-1]
    ]
    assert len(sections) == n_chunks
    assert "".join(sections) == CONTEXT
    assert "<section>" not in texts[-1]
    assert not any(s in texts[-1] for s in sections)


def test_turn_budgets_reach_the_engine(tokenizer):
    engine = FakeEngine(tokenizer, answers(set()))
    run(make_workflow(tokenizer, group_size=1), engine)
    budgets = [g.max_new_tokens for _, _, g in engine.requests]
    assert budgets[:-1] == [16] * (len(budgets) - 1)
    assert budgets[-1] == FakeEngine.final_budget
    assert all(g.n_samples == 1 for _, _, g in engine.requests)
    assert tokenizer.eos_token_id in engine.requests[0][2].stop_token_ids


def rewards_by_episode(traj, group, per_episode):
    r = traj["rewards"].view(group, per_episode)
    assert (r == r[:, :1]).all(), "all rows of an episode share one advantage"
    return r[:, 0].tolist()


def test_grpo_advantage_is_shared_by_all_rows_of_an_episode(tokenizer, n_chunks):
    traj = run(make_workflow(tokenizer), FakeEngine(tokenizer, answers({0, 2})))
    adv = rewards_by_episode(traj, GROUP, n_chunks + 1)
    assert adv == pytest.approx([0.5, -0.5, 0.5, -0.5])


def test_std_normalisation_is_optional(tokenizer, n_chunks):
    wf = make_workflow(tokenizer, adv_std_norm=True)
    traj = run(wf, FakeEngine(tokenizer, answers({1})))
    adv = rewards_by_episode(traj, GROUP, n_chunks + 1)
    std = (0.75 * 0.25) ** 0.5
    assert adv == pytest.approx(
        [-0.25 / std, 0.75 / std, -0.25 / std, -0.25 / std], rel=1e-4
    )


@pytest.mark.parametrize("correct", [set(), {0, 1, 2, 3}])
def test_tied_group_gets_finite_zeros(tokenizer, correct):
    traj = run(
        make_workflow(tokenizer, adv_std_norm=True),
        FakeEngine(tokenizer, answers(correct)),
    )
    assert torch.isfinite(traj["rewards"]).all() and (traj["rewards"] == 0).all()


def test_final_turn_can_be_excluded_from_training(tokenizer, n_chunks):
    traj = run(
        make_workflow(tokenizer, train_final_turn=False),
        FakeEngine(tokenizer, answers({0})),
    )
    per_row = traj["loss_mask"].sum(dim=1).view(GROUP, n_chunks + 1)
    assert (per_row[:, -1] == 0).all() and (per_row[:, :-1] > 0).all()


def test_memory_turns_can_be_excluded_from_training(tokenizer, n_chunks):
    traj = run(
        make_workflow(tokenizer, train_memory_turns=False),
        FakeEngine(tokenizer, answers({0})),
    )
    per_row = traj["loss_mask"].sum(dim=1).view(GROUP, n_chunks + 1)
    assert (per_row[:, :-1] == 0).all() and (per_row[:, -1] > 0).all()
    # the rows are still there, with their advantages (for logging and shapes)
    assert rewards_by_episode(traj, GROUP, n_chunks + 1) == pytest.approx(
        [0.75, -0.25, -0.25, -0.25]
    )


def test_a_workflow_that_trains_no_row_is_refused(tokenizer):
    with pytest.raises(ValueError, match="both False"):
        make_workflow(tokenizer, train_memory_turns=False, train_final_turn=False)


def test_failed_episodes_are_dropped_and_an_all_failed_group_is_rejected(
    tokenizer, n_chunks
):
    traj = run(
        make_workflow(tokenizer), FakeEngine(tokenizer, answers({0}), fail_for={1})
    )
    assert traj["input_ids"].shape[0] == (GROUP - 1) * (n_chunks + 1)
    assert (
        run(
            make_workflow(tokenizer),
            FakeEngine(tokenizer, answers({0}), fail_for=range(GROUP)),
        )
        is None
    )


def test_stats_are_logged_under_the_rollout_scope(tokenizer, n_chunks):
    stats_tracker.get("rollout").export(reset=True)
    run(make_workflow(tokenizer), FakeEngine(tokenizer, answers({0})))
    stats = stats_tracker.get("rollout").export(reset=True)
    assert stats["rollout/memagent/reward"] == pytest.approx(0.25)
    assert stats["rollout/memagent/final_boxed"] == 1.0
    assert stats["rollout/memagent/sub_em"] == pytest.approx(0.25)
    assert stats["rollout/memagent/n_chunks"] == n_chunks
    assert stats["rollout/memagent/memory_hit_limit"] == 0.0
    # every metric's exact value: tests/unit/test_group.py


def test_a_failing_call_is_made_again_and_counted(tokenizer, n_chunks):
    stats_tracker.get("rollout").export(reset=True)
    engine = FakeEngine(tokenizer, answers({0}), failures=3)
    traj = run(make_workflow(tokenizer, engine_retry_s=2.0), engine)
    assert traj["input_ids"].shape[0] == GROUP * (n_chunks + 1)  # nothing lost
    stats = stats_tracker.get("rollout").export(reset=True)
    retried = stats["rollout/memagent/calls_retried"]
    assert retried * stats["rollout/memagent/calls_retried__count"] == 3
    assert stats["rollout/memagent/episodes_failed"] == 0


def test_a_call_failing_for_engine_retry_s_fails_its_episode_in_bounded_time(
    tokenizer,
):
    import time

    stats_tracker.get("rollout").export(reset=True)
    engine = FakeEngine(tokenizer, answers({0}), failures=10**9)
    start = time.monotonic()
    assert run(make_workflow(tokenizer, engine_retry_s=0.3), engine) is None
    assert time.monotonic() - start < 2.0
    stats = stats_tracker.get("rollout").export(reset=True)
    assert stats["rollout/memagent/episodes_failed"] == GROUP  # the rejected group
    assert stats["rollout/memagent/calls_retried"] >= GROUP


@pytest.mark.parametrize("reward, expected", [("original", 0.0), ("squad", 1.0)])
def test_the_configured_reward_scores_the_group(tokenizer, reward, expected):
    """\\boxed{The river} vs gold "river": the article decides."""
    wf = make_workflow(tokenizer, reward=reward, group_size=1)
    stats_tracker.get("rollout").export(reset=True)
    run(wf, FakeEngine(tokenizer, lambda ep: "\\boxed{The river}"))
    stats = stats_tracker.get("rollout").export(reset=True)
    assert stats["rollout/memagent/reward"] == expected


def length_reward(response: str, golds: list[str]) -> float:
    """A custom reward for the test below: the answer's length, gold ignored."""
    return float(len(response))


def test_a_reward_given_by_import_string_scores_the_group(tokenizer):
    answer = "\\boxed{The river}"
    wf = make_workflow(
        tokenizer, reward="tests.unit.test_workflow.length_reward", group_size=1
    )
    stats_tracker.get("rollout").export(reset=True)
    run(wf, FakeEngine(tokenizer, lambda ep: answer))
    stats = stats_tracker.get("rollout").export(reset=True)
    assert stats["rollout/memagent/reward"] == len(answer)


@pytest.mark.parametrize(
    "reward, why",
    [
        ("tests.unit.no_such_module.score", "does not resolve"),
        ("tests.unit.test_workflow.no_such_function", "does not resolve"),
        ("tests.unit.test_workflow.CHUNK", "not a function"),
        ("exact", "choose one of"),
    ],
)
def test_a_bad_reward_string_is_refused_with_the_key_named(tokenizer, reward, why):
    with pytest.raises(ValueError, match=rf"memagent\.reward='{reward}'.*{why}"):
        make_workflow(tokenizer, reward=reward)


def test_a_groups_requests_share_one_rid_so_areal_sends_them_to_one_server(tokenizer):
    class Recording(FakeEngine):
        async def agenerate(self, req):
            self.seen = [*getattr(self, "seen", []), (req.rid, req.metadata["episode"])]
            return await super().agenerate(req)

    engine = Recording(tokenizer, answers({0}))
    run(make_workflow(tokenizer), engine)
    rids = {rid for rid, _ in engine.seen}
    assert len(rids) == 1  # AReaL's RemoteInfEngine routes by rid
    assert len({ep for _, ep in engine.seen}) == GROUP  # episodes kept apart
    assert len(engine.episodes) == GROUP
    engine2 = Recording(tokenizer, answers({0}))
    run(make_workflow(tokenizer), engine2)
    assert {rid for rid, _ in engine2.seen} != rids  # a new group, a new rid

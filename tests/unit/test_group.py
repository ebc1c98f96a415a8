"""One GRPO group through MemAgentWorkflow: its rows and its metrics, exactly.

A scripted engine (tests/fakes.py) answers every turn with known tokens,
logprobs, versions and latency; one episode of the group fails half-way. Every
row is rebuilt here from the engine's record of its call and the advantage of
its episode, computed by hand, and the rows must be exactly these (in any
order); every logged metric must equal its value computed by hand.
"""

import asyncio
from collections import Counter

import pytest
import torch
from areal.utils import stats_tracker

from tests.builders import make_workflow
from tests.fakes import FakeEngine, MemoryScript

CONTEXT = " ".join(f"Fact {i}: the river number {i} flows north." for i in range(16))
CHUNK = 24
MEMORY = 12
GROUP = 4
FAILED = 3  # this episode raises at its third turn
ANSWERS = [
    "so \\boxed{river}",  # reward 1; sub-EM 1, EM 1, F1 1
    "I think \\boxed{the river delta}",  # reward 0; sub-EM 1, EM 0, F1 2/3
    "river, but no box",  # reward 0; no box: every score 0
    "\\boxed{river}",  # would score 1, but the episode fails
]
ADVANTAGE = {0: 2 / 3, 1: -1 / 3, 2: -1 / 3}  # R - mean(R) over the 3 survivors


@pytest.fixture(scope="module")
def n_chunks(tokenizer):
    n = len(tokenizer.encode(CONTEXT, add_special_tokens=False))
    assert n % CHUNK != 0
    return -(-n // CHUNK)


def run_group(tokenizer, n_chunks, answers=ANSWERS, fail_at=None, **kw):
    # A failed call fails its episode here (no retry, make_workflow's default;
    # retries: test_workflow.py).
    wf = make_workflow(
        tokenizer,
        chunk_tokens=CHUNK,
        max_memory_tokens=MEMORY,
        max_final_tokens=32,
        group_size=GROUP,
        **kw,
    )
    engine = FakeEngine(
        script=MemoryScript(tokenizer, n_chunks, answers, MEMORY),
        fail_at={FAILED: 2} if fail_at is None else fail_at,
    )
    item = {"id": "q", "question": "Which river?", "context": CONTEXT}
    stats_tracker.get("rollout").export(reset=True)
    traj = asyncio.run(wf.arun_episode(engine, dict(item, answers=["river"])))
    stats = stats_tracker.get("rollout").export(reset=True)
    return traj, engine, stats


def actual_rows(traj) -> Counter:
    """Each row cut to its attention length, after checking the padding."""
    rows = Counter()
    for r in range(traj["input_ids"].shape[0]):
        n = int(traj["attention_mask"][r].sum())
        assert traj["attention_mask"][r, :n].all(), "attention is a prefix"
        assert not traj["loss_mask"][r, n:].any(), "no loss on padding"
        rows[
            (
                tuple(traj["input_ids"][r, :n].tolist()),
                tuple(traj["loss_mask"][r, :n].tolist()),
                tuple(traj["logprobs"][r, :n].tolist()),
                tuple(traj["versions"][r, :n].tolist()),
                round(float(traj["rewards"][r]), 6),
            )
        ] += 1
    return rows


def expected_rows(engine, advantage, n_chunks, train_final_turn=True) -> Counter:
    """Rows rebuilt from the engine's record: prompt, then the generated tokens."""
    rows = Counter()
    for episode, adv in advantage.items():
        calls = engine.episode_calls(episode)
        assert [c.turn for c in calls] == list(range(n_chunks + 1))
        for c in calls:
            p, out = len(c.input_ids), c.output_ids
            trained = c.turn < n_chunks or train_final_turn
            rows[
                (
                    tuple(c.input_ids + out),
                    tuple([0] * p + [int(trained)] * len(out)),
                    tuple([0.0] * p + c.logprobs),
                    tuple([-1] * p + c.versions),
                    round(adv, 6),
                )
            ] += 1
    return rows


def test_rows_are_exactly_the_calls_with_their_episode_advantage(tokenizer, n_chunks):
    traj, engine, _ = run_group(tokenizer, n_chunks)
    assert traj["input_ids"].shape[0] == (GROUP - 1) * (n_chunks + 1)
    assert traj["rewards"].dtype == torch.float32
    assert actual_rows(traj) == expected_rows(engine, ADVANTAGE, n_chunks)
    # every episode of the group was run, each with its own request id
    assert len(engine.episodes) == GROUP
    assert {c.episode for c in engine.calls} == set(range(GROUP))


def test_a_final_turn_left_out_of_training_keeps_its_row(tokenizer, n_chunks):
    traj, engine, _ = run_group(tokenizer, n_chunks, train_final_turn=False)
    want = expected_rows(engine, ADVANTAGE, n_chunks, train_final_turn=False)
    assert actual_rows(traj) == want


def test_std_normalised_advantages(tokenizer, n_chunks):
    traj, engine, _ = run_group(tokenizer, n_chunks, adv_std_norm=True)
    std = (2 / 9) ** 0.5  # population std of (1, 0, 0)
    adv = {e: a / (std + 1e-6) for e, a in ADVANTAGE.items()}
    assert actual_rows(traj) == expected_rows(engine, adv, n_chunks)


def test_a_group_without_failures_centres_on_all_its_episodes(tokenizer, n_chunks):
    traj, engine, stats = run_group(tokenizer, n_chunks, fail_at={})
    adv = {0: 0.5, 1: -0.5, 2: -0.5, 3: 0.5}
    assert actual_rows(traj) == expected_rows(engine, adv, n_chunks)
    assert stats["rollout/memagent/episodes_failed"] == 0
    assert stats["rollout/memagent/reward"] == pytest.approx(0.5)


def test_metrics_of_the_group_by_hand(tokenizer, n_chunks):
    _, engine, stats = run_group(tokenizer, n_chunks)
    script = engine.script
    survivors = [0, 1, 2]
    calls = [c for c in engine.calls if c.episode in survivors]
    memory_calls = [c for c in calls if c.turn < n_chunks]
    assert len(memory_calls) == 3 * n_chunks
    kept = [len(script.kept(c.episode, c.turn)) for c in memory_calls]
    kinds = Counter(script.kind(c.turn) for c in memory_calls)
    n_tokens = len(tokenizer.encode(CONTEXT, add_special_tokens=False))
    prompts = [list(c.input_ids) for c in calls]
    trie = {tuple(p[: i + 1]) for p in prompts for i in range(len(p))}  # its nodes
    expected = {
        "reward": 1 / 3,
        "n_chunks": n_chunks,
        "context_tokens": n_tokens,
        "truncated_context_tokens": 0,
        "final_boxed": 2 / 3,
        "sub_em": 2 / 3,
        "em": 1 / 3,
        "f1": (1 + 2 / 3 + 0) / 3,
        # per call of the survivors; the failed episode's calls do not count
        "turn_latency_s": sum(c.latency for c in calls) / len(calls),
        "episodes_failed": 1,
        "calls_retried": 0.0,
        "item_rejected": 0.0,
        "rows": 3 * (n_chunks + 1),
        "oldest_version": min(min(c.versions) for c in calls),
        # per memory turn, not per call
        "memory_tokens": sum(kept) / len(memory_calls),
        "memory_hit_limit": kinds["cut"] / len(memory_calls),
        "memory_empty": (kinds["empty"] + kinds["all_oov"]) / len(memory_calls),
        # the group's prompt tokens, and those a prefix cache finds again
        "prompt_tokens": sum(map(len, prompts)),
        "prompt_tokens_shared": sum(map(len, prompts)) - len(trie),
    }
    got = {
        k.removeprefix("rollout/memagent/"): v
        for k, v in stats.items()
        if k.startswith("rollout/memagent/") and not k.endswith("__count")
    }
    assert got == pytest.approx(expected)
    # the group exercises every counter (sub-EM, EM and F1 differ by design)
    assert kinds["cut"] and kinds["empty"] and kinds["all_oov"] and sum(kept) > 0


def test_metrics_count_the_cut_tokens_apart_from_the_context(tokenizer, n_chunks):
    _, _, stats = run_group(tokenizer, n_chunks, max_chunks=2, fail_at={})
    n_tokens = len(tokenizer.encode(CONTEXT, add_special_tokens=False))
    assert stats["rollout/memagent/n_chunks"] == 2
    assert stats["rollout/memagent/context_tokens"] == n_tokens
    assert stats["rollout/memagent/truncated_context_tokens"] == n_tokens - 2 * CHUNK
    assert stats["rollout/memagent/rows"] == GROUP * 3

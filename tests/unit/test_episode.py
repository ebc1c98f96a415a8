"""One MemAgent episode, token for token: what every prompt holds, slot by slot.

Each expected prompt is rebuilt here from the template pieces, the document's
own token ids and what the scripted engine wrote the turn before, and compared
with the ids the engine received in full. A memory appended to (or merged
with) the old one, a chunk skipped, repeated or out of order, a cut memory
replaced, a stop token or an out-of-vocabulary id leaking into a prompt, or a
chunk left in the final prompt all change some prompt.
"""

import asyncio

import pytest

from memagent_workflow.prompts import final_answer_template, memory_update_template
from tests.builders import expected_prompts as build_expected
from tests.builders import make_workflow
from tests.fakes import FakeEngine, MemoryScript

QUESTION = "Which river flows north?"
CONTEXT = " ".join(
    f"Fact {i}: the river number {i} flows {('north', 'south', 'east')[i % 3]}."
    for i in range(30)
)
CHUNK = 32
MEMORY = 12
FINAL = 20
INITIAL = "Nothing read yet"


@pytest.fixture(scope="module")
def doc_ids(tokenizer):
    ids = tokenizer.encode(CONTEXT, add_special_tokens=False)
    # enough chunks for every kind of memory turn, and a short last chunk
    assert len(ids) > 7 * CHUNK and len(ids) % CHUNK != 0
    return ids


def run_group(tokenizer, n_chunks, group_size=2, answers=("\\boxed{river}",), **kw):
    wf = make_workflow(
        tokenizer,
        chunk_tokens=CHUNK,
        max_memory_tokens=MEMORY,
        max_final_tokens=FINAL,
        group_size=group_size,
        initial_memory=INITIAL,
        **kw,
    )
    script = MemoryScript(tokenizer, n_chunks, list(answers), MEMORY)
    engine = FakeEngine(script=script)
    item = {"id": "q1", "question": QUESTION, "context": CONTEXT, "answers": ["river"]}
    traj = asyncio.run(wf.arun_episode(engine, item))
    return traj, engine, script


def expected_prompts(tokenizer, script, episode, chunks, initial=INITIAL):
    """Every prompt of one episode, built from the template pieces by hand."""
    return build_expected(tokenizer, script, episode, chunks, QUESTION, initial)


def test_the_template_pieces_are_the_ones_the_slots_sit_between(tokenizer):
    # The rebuilt prompts below trust these pieces; pin where they cut the text.
    mem = memory_update_template(tokenizer, QUESTION)
    fin = final_answer_template(tokenizer, QUESTION)
    text = lambda ids: tokenizer.decode([int(t) for t in ids])  # noqa: E731
    assert text(mem.before_memory).endswith(f"{QUESTION}\n</question>\n\n<memory>\n")
    assert text(mem.after_memory) == "\n</memory>\n\n<section>\n"
    assert text(mem.after_chunk).startswith("\n</section>\n\nNew memory:")
    assert text(fin.before_memory).endswith(f"{QUESTION}\n</question>\n\n<memory>\n")
    assert text(fin.after_memory).startswith("\n</memory>\n\nAnswer:")
    assert "<section>" not in text(fin.before_memory) + text(fin.after_memory)


def test_every_prompt_is_template_memory_and_chunk_exactly(tokenizer, doc_ids):
    chunks = [doc_ids[i : i + CHUNK] for i in range(0, len(doc_ids), CHUNK)]
    _, engine, script = run_group(tokenizer, len(chunks), group_size=2)
    # every kind of memory turn happened, and each was followed by a memory turn
    assert {script.kind(k) for k in range(len(chunks) - 1)} == set(script.KINDS)
    assert sorted(engine.episodes.values()) == [0, 1]
    for episode in (0, 1):
        calls = engine.episode_calls(episode)
        want = expected_prompts(tokenizer, script, episode, chunks)
        assert len(calls) == len(want) == len(chunks) + 1
        for k, (call, prompt) in enumerate(zip(calls, want, strict=True)):
            assert call.input_ids == prompt, f"episode {episode}, turn {k}"
        budgets = [c.max_new_tokens for c in calls]
        assert budgets == [MEMORY] * len(chunks) + [FINAL]


def test_a_cut_document_shows_its_head_and_tail_exactly(tokenizer, doc_ids):
    # max_chunks=3: keep 48 head + 48 tail tokens; the middle chunk straddles the cut
    n, budget = len(doc_ids), 3 * CHUNK
    kept = doc_ids[: budget - budget // 2] + doc_ids[n - budget // 2 :]
    chunks = [kept[:CHUNK], kept[CHUNK : 2 * CHUNK], kept[2 * CHUNK :]]
    assert chunks[1] == doc_ids[32:48] + doc_ids[n - 48 : n - 32]
    _, engine, script = run_group(tokenizer, 3, group_size=1, max_chunks=3)
    calls = engine.episode_calls(0)
    assert [c.input_ids for c in calls] == expected_prompts(
        tokenizer, script, 0, chunks
    )


def test_an_empty_document_is_answered_from_the_default_initial_memory(tokenizer):
    wf = make_workflow(tokenizer, max_final_tokens=FINAL, group_size=1)
    engine = FakeEngine(script=MemoryScript(tokenizer, 0, ["\\boxed{x}"], MEMORY))
    item = {"id": "q", "question": QUESTION, "context": "", "answers": ["x"]}
    traj = asyncio.run(wf.arun_episode(engine, item))
    # MemAgent's initial memory text
    assert [c.input_ids for c in engine.calls] == expected_prompts(
        tokenizer, engine.script, 0, [], initial="No previous memory"
    )
    assert traj["input_ids"].shape[0] == 1


def test_the_eval_workflow_runs_the_same_episode(tokenizer, doc_ids):
    from memagent_workflow.eval.workflow import MemAgentEvalWorkflow

    chunks = [doc_ids[i : i + CHUNK] for i in range(0, len(doc_ids), CHUNK)]
    wf = make_workflow(
        tokenizer,
        cls=MemAgentEvalWorkflow,
        chunk_tokens=CHUNK,
        max_memory_tokens=MEMORY,
        max_final_tokens=FINAL,
        initial_memory=INITIAL,
    )
    answer = "It flows north, so \\boxed{the river 7}"
    script = MemoryScript(tokenizer, len(chunks), [answer], MEMORY)
    engine = FakeEngine(script=script)
    item = {
        "id": "q7",
        "question": QUESTION,
        "context": CONTEXT,
        "answers": ["river 7"],
    }
    rec = asyncio.run(wf.arun_episode(engine, item))
    assert [c.input_ids for c in engine.calls] == expected_prompts(
        tokenizer, engine.script, 0, chunks
    )
    assert rec["prediction"] == answer and rec["extracted"] == "the river 7"
    assert (rec["sub_em"], rec["em"], rec["f1"], rec["error"]) == (1.0, 1.0, 1.0, None)
    assert rec["n_chunks"] == len(chunks) and rec["context_tokens"] == len(doc_ids)
    assert rec["output_tokens"] == sum(len(c.output_ids) for c in engine.calls)


def test_wipe_memory_gives_every_turn_the_initial_memory(tokenizer, doc_ids):
    # The ablation: the memory written is never read, the final turn included.
    chunks = [doc_ids[i : i + CHUNK] for i in range(0, len(doc_ids), CHUNK)]
    _, engine, script = run_group(
        tokenizer, len(chunks), group_size=1, wipe_memory=True
    )
    calls = engine.episode_calls(0)
    mem = memory_update_template(tokenizer, QUESTION)
    fin = final_answer_template(tokenizer, QUESTION)
    initial = tokenizer.encode(INITIAL, add_special_tokens=False)
    want = [
        [*map(int, mem.before_memory), *initial, *map(int, mem.after_memory), *c]
        + [*map(int, mem.after_chunk)]
        for c in chunks
    ] + [[*map(int, fin.before_memory), *initial, *map(int, fin.after_memory)]]
    assert [c.input_ids for c in calls] == want
    # and without the option, a written memory does reach the next turn
    assert expected_prompts(tokenizer, script, 0, chunks) != want

"""``memagent.empty_memory``: what the turn after an empty memory reads.

``keep`` (the original's synchronous training, config.yaml) passes the empty
memory on: the next prompt's memory slot holds no token. ``initial`` (the
dataclass default, the CPU configs) puts ``memagent.initial_memory`` back. Each
test fails if the knob is ignored in either direction.
"""

from __future__ import annotations

import asyncio

import pytest

from memagent_workflow.config import MemAgentConfig
from memagent_workflow.context import template_tokens, turn_budgets
from tests.builders import expected_prompts, make_workflow
from tests.fakes import FakeEngine, MemoryScript

QUESTION = "Which lake is the deepest?"
CONTEXT = " ".join(f"Lake {i} is {10 * i} metres deep." for i in range(40))
CHUNK = 24
MEMORY = 12
FINAL = 20
INITIAL = "Nothing read yet"
# MemoryScript writes, by turn: a memory, a cut memory, nothing, a memory with
# out-of-vocabulary ids, only out-of-vocabulary ids (kept: nothing), a memory.
N_CHUNKS = 5  # so the final turn follows an empty memory (turn 4)
EMPTY_TURNS = (2, 4)


def run(tokenizer, n_chunks: int = N_CHUNKS, group_size: int = 2, **knobs):
    """One group over the first ``n_chunks`` chunks of ``CONTEXT``: the engine,
    its script, the chunks' ids and the returned rows."""
    ids = tokenizer.encode(CONTEXT, add_special_tokens=False)[: n_chunks * CHUNK]
    settings = dict(
        chunk_tokens=CHUNK,
        max_memory_tokens=MEMORY,
        max_final_tokens=FINAL,
        group_size=group_size,
        initial_memory=INITIAL,
    )
    wf = make_workflow(tokenizer, **{**settings, **knobs})
    script = MemoryScript(tokenizer, n_chunks, ["\\boxed{lake 39}"], MEMORY)
    engine = FakeEngine(script=script)
    item = {
        "id": "q",
        "question": QUESTION,
        "context": tokenizer.decode(ids),
        "answers": ["lake 39"],
    }
    rows = asyncio.run(wf.arun_episode(engine, item))
    chunks = [ids[i : i + CHUNK] for i in range(0, len(ids), CHUNK)]
    assert len(chunks) == n_chunks  # the decoded context re-encodes the same
    return engine, script, chunks, rows


def expected(tokenizer, script, episode: int, chunks, keep: bool) -> list[list[int]]:
    """Every prompt of one episode, from the template pieces by hand."""
    return expected_prompts(
        tokenizer, script, episode, chunks, QUESTION, INITIAL, keep_empty=keep
    )


def memory_slots(tokenizer, engine, episode: int) -> list[str]:
    """The text between ``<memory>`` and ``</memory>`` of each prompt."""
    slots = []
    for call in engine.episode_calls(episode):
        text = tokenizer.decode(call.input_ids)
        slots.append(text.split("<memory>\n", 1)[1].split("\n</memory>", 1)[0])
    return slots


@pytest.mark.parametrize("rule", ["keep", "initial"])
def test_each_prompt_holds_what_the_rule_passes_on(tokenizer, rule):
    engine, script, chunks, rows = run(tokenizer, empty_memory=rule)
    assert [script.kind(k) for k in EMPTY_TURNS] == ["empty", "all_oov"]
    for episode in (0, 1):
        calls = engine.episode_calls(episode)
        want = expected(tokenizer, script, episode, chunks, keep=rule == "keep")
        assert [c.input_ids for c in calls] == want, f"episode {episode}"
        # the turns after an empty memory, the final one included
        after_empty = [
            memory_slots(tokenizer, engine, episode)[k + 1] for k in EMPTY_TURNS
        ]
        assert after_empty == (["", ""] if rule == "keep" else [INITIAL, INITIAL])
    # every turn of both episodes became a row
    assert rows["input_ids"].shape[0] == 2 * (N_CHUNKS + 1)


def test_the_default_is_initial(tokenizer):
    assert MemAgentConfig().empty_memory == "initial"
    engine, *_ = run(tokenizer, group_size=1)
    after_empty = [memory_slots(tokenizer, engine, 0)[k + 1] for k in EMPTY_TURNS]
    assert after_empty == [INITIAL, INITIAL]


@pytest.mark.parametrize("rule", ["keep", "initial"])
def test_the_text_build_passes_on_the_same_memory(tokenizer, rule):
    # prompt_build=text decodes the memory and encodes the whole message: an
    # empty memory leaves the slot empty there too
    engine, *_ = run(tokenizer, group_size=1, empty_memory=rule, prompt_build="text")
    after_empty = [memory_slots(tokenizer, engine, 0)[k + 1] for k in EMPTY_TURNS]
    assert after_empty == (["", ""] if rule == "keep" else [INITIAL, INITIAL])


def test_an_empty_memory_fits_the_tightest_window(tokenizer):
    # The window check_fit accepts at its narrowest (a full memory, a full
    # chunk, this question): the kept empty memory only shortens a prompt.
    wf = make_workflow(tokenizer, chunk_tokens=CHUNK, max_memory_tokens=MEMORY,
                       max_final_tokens=FINAL, initial_memory=INITIAL)  # fmt: skip
    initial = len(tokenizer.encode(INITIAL, add_special_tokens=False))
    question = len(tokenizer.encode(QUESTION, add_special_tokens=False))
    budgets = turn_budgets(
        template_tokens(tokenizer, wf.prompts),
        chunk_tokens=CHUNK,
        max_memory_tokens=MEMORY,
        max_final_tokens=FINAL,
        initial_memory_tokens=initial,
    )
    window = max(b.total for b in budgets) + question + 1  # prompt + new < window
    engine, script, chunks, rows = run(
        tokenizer, group_size=1, empty_memory="keep", max_tokens=window
    )
    calls = engine.episode_calls(0)
    assert len(calls) == N_CHUNKS + 1 and rows is not None
    assert all(len(c.input_ids) + c.max_new_tokens < window for c in calls)
    # after an empty memory the prompt is the initial one's less its tokens
    with_initial = expected(tokenizer, script, 0, chunks, keep=False)
    for k in EMPTY_TURNS:
        assert len(calls[k + 1].input_ids) == len(with_initial[k + 1]) - initial


def test_an_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="memagent.empty_memory='drop'"):
        MemAgentConfig(empty_memory="drop")

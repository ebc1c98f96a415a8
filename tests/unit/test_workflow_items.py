"""MemAgentWorkflow against a scripted engine: what it makes of the item it is
given: a context over ``max_chunks`` cut in the middle (and counted), bad
fields and a question that cannot fit refused, an item's index named in its
rows.
"""

import asyncio

import pytest
from areal.utils import stats_tracker

from memagent_workflow.data.files import DataError
from memagent_workflow.workflow import parse_item
from tests.builders import CHUNK_TOKENS as CHUNK
from tests.builders import make_workflow
from tests.fakes import FakeEngine
from tests.unit.test_workflow import CONTEXT, ITEM, answers, run


def test_max_chunks_truncates_the_middle_and_is_counted(tokenizer):
    stats_tracker.get("rollout").export(reset=True)
    traj = run(
        make_workflow(tokenizer, max_chunks=2, group_size=2),
        FakeEngine(tokenizer, answers({0})),
    )
    assert traj["input_ids"].shape[0] == 2 * 3
    stats = stats_tracker.get("rollout").export(reset=True)
    n = len(tokenizer.encode(CONTEXT, add_special_tokens=False))
    assert stats["rollout/memagent/truncated_context_tokens"] == n - 2 * CHUNK
    assert stats["rollout/memagent/n_chunks"] == 2


@pytest.mark.parametrize(
    "field, value",
    [("question", ""), ("context", 3), ("answers", []), ("answers", [1])],
)
def test_bad_items_name_the_item_and_field(tokenizer, field, value):
    with pytest.raises(DataError, match=f"q1.*'{field}'"):
        parse_item(dict(ITEM, **{field: value}))


@pytest.mark.parametrize("field, value", [("question", ""), ("answers", [""])])
def test_a_malformed_item_rejects_its_group_and_is_counted(tokenizer, field, value):
    engine = FakeEngine(tokenizer, answers(set()))
    wf = make_workflow(tokenizer)
    stats_tracker.get("rollout").export(reset=True)
    assert run(wf, engine, dict(ITEM, **{field: value})) is None
    stats = stats_tracker.get("rollout").export(reset=True)
    assert stats["rollout/memagent/item_rejected"] == 1.0
    assert engine.requests == []  # nothing was generated for it


def test_a_prompt_that_cannot_fit_is_refused_not_shortened(tokenizer):
    with pytest.raises(ValueError, match="gconfig.max_tokens=60"):  # at construction
        make_workflow(tokenizer, max_tokens=60)
    # Room for the template with an empty question, not for this long question:
    overhead = make_workflow(tokenizer).prompts.memory_template(tokenizer, "").overhead
    fits = overhead + 16 + CHUNK + 16 + FakeEngine.final_budget
    wf = make_workflow(tokenizer, max_tokens=fits, group_size=1)
    item = dict(ITEM, question="Which river flows north? " * 40)
    with pytest.raises(ValueError, match="reaches gconfig.max_tokens"):
        asyncio.run(
            wf.run_episode(
                FakeEngine(tokenizer, answers(set())),
                asyncio.run(wf.read_document(item)),
            )
        )


def test_rows_name_their_question_when_the_item_has_an_index(tokenizer):
    traj = run(
        make_workflow(tokenizer, group_size=2),
        FakeEngine(tokenizer, answers({0})),
        dict(ITEM, question_index=7),
    )
    assert traj["question_index"].tolist() == [7] * traj["input_ids"].shape[0]
    plain = run(
        make_workflow(tokenizer, group_size=2), FakeEngine(tokenizer, answers({0}))
    )
    assert "question_index" not in plain

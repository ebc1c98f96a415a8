"""Prompt templates and long-context encoding with the tiny tokenizer."""

import asyncio

import numpy as np
import pytest

from memagent_workflow.context import aencode_context, encode_context, split_text
from memagent_workflow.prompts import final_answer_template, memory_update_template
from memagent_workflow.prompts.wording import ANSWER_ASKS, FINAL_PROMPTS


def doc(n: int) -> str:
    return "\n\n".join(
        f"Document {i}:\nPlace {i}\nThe town of Alder {i} lies near river {i * 7}."
        for i in range(n)
    )


def test_memory_prompt_holds_question_memory_and_section_in_a_chat(tokenizer):
    tpl = memory_update_template(tokenizer, "Where is Alder?")
    memory = tokenizer.encode("Alder is north", add_special_tokens=False)
    chunk = tokenizer.encode("The town of Alder lies", add_special_tokens=False)
    text = tokenizer.decode(tpl.build(memory, chunk).tolist())
    assert text.startswith("<|im_start|>")
    assert text.rstrip().endswith("<|im_start|>assistant")
    q, m, s = (
        text.index(x)
        for x in ("Where is Alder?", "Alder is north", "The town of Alder lies")
    )
    assert q < m < s
    assert "<memory>\nAlder is north\n</memory>" in text
    assert "<section>\nThe town of Alder lies\n</section>" in text


def test_memory_and_chunk_ids_are_spliced_verbatim(tokenizer):
    tpl = memory_update_template(tokenizer, "q?")
    memory, chunk = [5, 6, 7], [8, 9]
    ids = tpl.build(memory, chunk).tolist()
    n = len(tpl.before_memory)
    assert ids[n : n + 3] == memory
    assert ids[n + 3 + len(tpl.after_memory) :][:2] == chunk
    assert len(ids) == tpl.overhead + 5


def test_final_prompt_asks_for_a_box_and_takes_no_chunk(tokenizer):
    tpl = final_answer_template(tokenizer, "Where is Alder?")
    text = tokenizer.decode(tpl.build([]).tolist())
    assert "\\boxed{" in text and "<section>" not in text and "Where is Alder?" in text
    with pytest.raises(ValueError):
        tpl.build([], [1])


def test_one_wording_asks_for_the_answer_in_every_final_prompt():
    """The built-in final prompts and the eval baselines take the same sentence."""
    from memagent_workflow.eval.baseline import FULL_CONTEXT_PROMPTS, NO_CONTEXT_PROMPTS

    assert set(ANSWER_ASKS) == set(FINAL_PROMPTS) == {"boxed", "answer_is"}
    for protocol, ask in ANSWER_ASKS.items():
        for prompts in (FINAL_PROMPTS, FULL_CONTEXT_PROMPTS, NO_CONTEXT_PROMPTS):
            assert ask in prompts[protocol]
    boxed = FINAL_PROMPTS["boxed"].format(question="q", memory="m")
    assert "inside \\boxed{}, e.g. \\boxed{Paris}." in boxed
    answer_is = FINAL_PROMPTS["answer_is"].format(question="q", memory="m")
    assert '"Therefore, the answer is (your answer)"' in answer_is


def test_memory_prompt_requires_a_chunk(tokenizer):
    with pytest.raises(ValueError):
        memory_update_template(tokenizer, "q").build([1])


def test_thinking_is_disabled_when_the_template_supports_it(tokenizer):
    calls = []

    class Recorder:
        def __getattr__(self, name):
            return getattr(tokenizer, name)

        def apply_chat_template(self, *args, **kwargs):
            calls.append(kwargs)
            return tokenizer.apply_chat_template(*args, **kwargs)

    final_answer_template(Recorder(), "q")
    assert calls and calls[0]["enable_thinking"] is False


@pytest.mark.parametrize("piece_chars", [64, 200, 1000])
def test_piecewise_encoding_equals_whole_encoding(tokenizer, piece_chars):
    text = doc(80) + "\n\n\n  odd   spacing\tand tabs\n \n end"
    whole = tokenizer.encode(text, add_special_tokens=False)
    pieces = split_text(tokenizer, text, piece_chars)
    assert len(pieces) > 3 and "".join(pieces) == text
    ids = encode_context(tokenizer, text, piece_chars)
    assert ids.dtype == np.int32 and ids.tolist() == whole


def test_async_encoding_runs_off_the_event_loop(tokenizer):
    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        ids = await aencode_context(tokenizer, doc(3000))
        task.cancel()
        return ids, ticks

    ids, ticks = asyncio.run(main())
    assert len(ids) > 10000 and ticks > 10  # the loop kept running while encoding


def test_empty_context_encodes_to_nothing(tokenizer):
    assert len(encode_context(tokenizer, "")) == 0

"""Qwen3 with thinking off: its prompts token for token, and a memory's think
block under each prompt build. The answer read after a think block is checked in
test_qwen3_answer.py.

Two kinds of checkpoint are meant: the hybrid-thinking Qwen3-4B, whose chat
template opens the reply with an empty think block when it is given
``enable_thinking=False`` (what ``render_chat`` passes), and
Qwen3-4B-Instruct-2507, which never thinks (no block). The chat templates are
``tests/data``'s, the vocabulary Qwen2.5's with Qwen3's added tokens
(``tests/qwen_vocab.py``). The expected prompts are written here from the
format, not rendered through a template: a user turn
``<|im_start|>user\\n...<|im_end|>\\n``, then ``<|im_start|>assistant\\n`` and,
thinking off, ``<think>\\n\\n</think>\\n\\n``, after which the reply starts.
"""

from __future__ import annotations

import re

import pytest

import memagent_workflow.prompts.tokens as pt
from memagent_workflow.prompts import PromptTexts, builtin_prompts
from tests.qwen_vocab import END_THINK_ID, THINK_ID

USER = "<|im_start|>user\n"
REPLY = "<|im_end|>\n<|im_start|>assistant\n"
EMPTY_THINK = "<think>\n\n</think>\n\n"
# Qwen3's ids of the reply's opening ("<|im_end|>", "\n", "<|im_start|>",
# "assistant", "\n") and of the empty think block ("<think>", "\n\n",
# "</think>", "\n\n").
REPLY_IDS = [151645, 198, 151644, 77091, 198]
EMPTY_THINK_IDS = [THINK_ID, 271, END_THINK_ID, 271]
USER_IDS = [151644, 872, 198]  # "<|im_start|>", "user", "\n"

QUESTIONS = [
    "Which river flows through the town where Alder was born?",  # "?" + "\n"
    "  Who wrote it?  ",  # kept as it is by tokens, stripped by text
]
SLOT = re.compile(r"\{(question|memory|chunk)\}")


def ids_of(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False)


@pytest.fixture(params=["hybrid", "instruct_2507"])
def qwen3(request):
    """``(tokenizer, think text, think ids)``: the hybrid Qwen3 with thinking off
    (an empty think block opens the reply), or Instruct-2507 (none)."""
    if request.param == "hybrid":
        return request.getfixturevalue("qwen3_tokenizer"), EMPTY_THINK, EMPTY_THINK_IDS
    return request.getfixturevalue("qwen3_instruct_tokenizer"), "", []


@pytest.fixture(scope="module")
def pieces(qwen3_tokenizer):
    """Memories (the initial one, a generated one ending in "?") and a chunk
    cut mid-word from a tokenised document."""
    tok = qwen3_tokenizer
    doc = ids_of(tok, "Alder was born in Brenna?\nThe Sile flows through Brenna. " * 8)
    return {
        "memories": [
            ids_of(tok, "No previous memory"),
            ids_of(tok, "Alder: born in Brenna. Which river?"),
        ],
        "chunk": doc[3:57],
    }


def token_reference(
    tokenizer, template: str, think: str, **ids: list[int]
) -> tuple[list[int], dict[str, tuple[int, int]]]:
    """The original's token construction over the Qwen3 format written by hand:
    the chat text cut at every slot, each text piece encoded on its own, the
    slots' ids in between; with each slot's ``(start, end)`` in the result."""
    slots = {name: "{" + name + "}" for name in ids}
    chat = USER + template.format(**slots) + REPLY + think
    out: list[int] = []
    spans: dict[str, tuple[int, int]] = {}
    for k, part in enumerate(SLOT.split(chat)):
        if k % 2:
            spans[part] = (len(out), len(out) + len(ids[part]))
            out += ids[part]
        else:
            out += ids_of(tokenizer, part)
    return out, spans


def check_reply_start(ids: list[int], think_ids: list[int]) -> None:
    """The prompt opens a user turn and ends where the reply starts: after the
    assistant header and (thinking off) the one empty think block."""
    assert ids[:3] == USER_IDS
    assert ids[len(ids) - len(think_ids) - len(REPLY_IDS) :] == REPLY_IDS + think_ids
    assert ids.count(THINK_ID) == ids.count(END_THINK_ID) == (1 if think_ids else 0)


# --------------------------------------------------------------- the tokenizer


def test_qwen3_tokenizer_has_the_think_tokens_as_qwen3_does(qwen3_tokenizer):
    tok = qwen3_tokenizer
    assert len(tok) == 151669
    assert ids_of(tok, EMPTY_THINK) == EMPTY_THINK_IDS
    assert ids_of(tok, "<|im_end|>\n<|im_start|>assistant\n") == REPLY_IDS
    # "special": false in Qwen3's tokenizer_config: a decode that skips the
    # special tokens (the workflow's) keeps them, so "</think>" can be found.
    text = tok.decode([*EMPTY_THINK_IDS, 151645], skip_special_tokens=True)
    assert text == EMPTY_THINK


def test_the_hybrid_template_needs_the_flag_for_its_empty_think_block(
    qwen3_tokenizer, qwen3_instruct_tokenizer
):
    msgs = [{"role": "user", "content": "Hi"}]
    kw = dict(tokenize=False, add_generation_prompt=True)
    hybrid = qwen3_tokenizer.apply_chat_template
    assert hybrid(msgs, **kw) == USER + "Hi" + REPLY  # the model would think
    assert hybrid(msgs, enable_thinking=True, **kw) == USER + "Hi" + REPLY
    assert (
        hybrid(msgs, enable_thinking=False, **kw) == USER + "Hi" + REPLY + EMPTY_THINK
    )
    instruct = qwen3_instruct_tokenizer.apply_chat_template
    assert instruct(msgs, enable_thinking=False, **kw) == USER + "Hi" + REPLY


# --------------------------------------------------------------- render_chat


class Spy:
    """A tokenizer that records what ``apply_chat_template`` is given."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.calls: list[tuple[list, dict]] = []

    def apply_chat_template(self, messages, **kwargs):
        self.calls.append((messages, kwargs))
        return self.tokenizer.apply_chat_template(messages, **kwargs)


def test_render_chat_asks_for_thinking_off(qwen3_tokenizer):
    spy = Spy(qwen3_tokenizer)
    assert pt.render_chat(spy, "Hi") == USER + "Hi" + REPLY + EMPTY_THINK
    assert spy.calls == [
        (
            [{"role": "user", "content": "Hi"}],
            dict(tokenize=False, add_generation_prompt=True, enable_thinking=False),
        )
    ]


def test_templates_without_the_flag_are_unaffected(
    qwen_tokenizer, qwen3_instruct_tokenizer
):
    """Qwen2.5's template (default system message, no think block) and
    Instruct-2507's ignore ``enable_thinking``: the same text as without it."""
    msgs = [{"role": "user", "content": "Hi"}]
    for tok in (qwen_tokenizer, qwen3_instruct_tokenizer):
        plain = tok.apply_chat_template(
            msgs, tokenize=False, add_generation_prompt=True
        )
        assert pt.render_chat(tok, "Hi") == plain
        assert "<think>" not in plain
    assert pt.render_chat(qwen_tokenizer, "Hi").startswith("<|im_start|>system\n")


# ------------------------------------------------ prompts, token for token


@pytest.mark.parametrize("question", QUESTIONS)
def test_token_prompts_follow_the_qwen3_format(qwen3, pieces, question):
    """``prompt_build: tokens`` (training): the memory and final prompts are the
    original's token construction over the Qwen3 format, the question's,
    memory's and chunk's own ids in their slots, the reply after the block."""
    tok, think, think_ids = qwen3
    texts = PromptTexts()
    q, chunk = ids_of(tok, question), pieces["chunk"]
    memory_tpl = texts.memory_template(tok, question, "tokens")
    final_tpl = texts.final_template(tok, question, "tokens")
    for memory in pieces["memories"]:
        got = memory_tpl.build(memory, chunk).tolist()
        want, spans = token_reference(
            tok, texts.memory_update, think, question=q, memory=memory, chunk=chunk
        )
        assert got == want
        for name, slot_ids in (("question", q), ("memory", memory), ("chunk", chunk)):
            start, end = spans[name]
            assert got[start:end] == slot_ids
        check_reply_start(got, think_ids)

        got = final_tpl.build(memory).tolist()
        want, spans = token_reference(
            tok, texts.final_answer, think, question=q, memory=memory
        )
        assert got == want
        assert got[slice(*spans["memory"])] == memory
        assert got[slice(*spans["question"])] == q
        check_reply_start(got, think_ids)
        shown = tok.decode(got)
        assert shown.endswith("Answer:" + REPLY + think)
        assert "\\boxed{}" in shown  # the template's doubled braces, formatted


@pytest.mark.parametrize("question", QUESTIONS)
def test_text_prompts_follow_the_qwen3_format(qwen3, pieces, question):
    """``prompt_build: text`` (the paper's eval): the message as text (question
    stripped, chunk and memory decoded) in the Qwen3 format, encoded whole."""
    tok, think, think_ids = qwen3
    texts = builtin_prompts("answer_is")
    chunk = pieces["chunk"]
    memory_tpl = texts.memory_template(tok, question, "text")
    final_tpl = texts.final_template(tok, question, "text")
    for memory in pieces["memories"]:
        shown = {"question": question.strip(), "memory": tok.decode(memory)}
        chat = texts.memory_update.format(chunk=tok.decode(chunk), **shown)
        got = memory_tpl.build(memory, chunk).tolist()
        assert got == ids_of(tok, USER + chat + REPLY + think)
        check_reply_start(got, think_ids)
        got = final_tpl.build(memory).tolist()
        chat = texts.final_answer.format(**shown)
        assert got == ids_of(tok, USER + chat + REPLY + think)
        check_reply_start(got, think_ids)
    # The overhead counts the block: what check_fit budgets is what is sent.
    empty = final_tpl.build([]).tolist()
    assert (
        final_tpl.overhead == len(empty)
        and empty[len(empty) - len(think_ids) :] == think_ids
    )


def test_the_question_keeps_its_own_ids_under_tokens_only(qwen3_tokenizer, pieces):
    """A question ending in "?" before a newline: its own ids in the token
    build, merged with the newline in the text build, in Qwen3's format too."""
    tok, question, memory = qwen3_tokenizer, QUESTIONS[0], pieces["memories"][0]
    texts = PromptTexts()
    tokens = texts.final_template(tok, question, "tokens").build(memory).tolist()
    text = texts.final_template(tok, question, "text").build(memory).tolist()
    assert tokens != text
    assert tok.decode(tokens) == tok.decode(text)
    check_reply_start(tokens, EMPTY_THINK_IDS)
    check_reply_start(text, EMPTY_THINK_IDS)


# -------------------------------------------------------------- the memory


def test_memory_think_block_kept_by_tokens_dropped_by_text(qwen3_tokenizer):
    """The memory rule: with ``tokens`` a memory is exactly the tokens the model
    wrote, think block and all (the original's training); with ``text`` it is
    the text after its last ``</think>`` (the original's evaluation)."""
    tok = qwen3_tokenizer
    memory = ids_of(tok, "<think>\nWhere was Alder born?\n</think>\n\nAlder: Brenna.")
    assert memory.count(END_THINK_ID) == 1  # one token, not text
    texts = PromptTexts()
    kept = texts.final_template(tok, "Who?", "tokens").build(memory).tolist()
    assert kept.count(END_THINK_ID) == 2  # the memory's and the prompt's own
    assert tok.decode(kept).count("Where was Alder born?") == 1
    dropped = texts.final_template(tok, "Who?", "text").build(memory).tolist()
    check_reply_start(dropped, EMPTY_THINK_IDS)  # only the prompt's own block
    shown = tok.decode(dropped)
    assert "<memory>\nAlder: Brenna.\n</memory>" in shown
    assert "Where was Alder born?" not in shown

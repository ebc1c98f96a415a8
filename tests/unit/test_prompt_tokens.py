"""Token-exact prompts: a prompts file written like the original MemAgent's
templates gives, token for token, the prompts the original built.

The templates below are this project's own words in the original's structure
(a space after ``<problem>``, a trailing newline, a literal ``\\boxed{{}}`` in the
training variant). ``reference_prompt`` is the original's construction, written
here as the spec: the chat template rendered around a ``{message}`` placeholder,
the template pasted in with ``str.format`` (so its own braces are never
formatted), the result cut at every ``{name}`` slot, each text piece encoded on
its own, and the question's, memory's and chunk's ids put in between.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from memagent_workflow.prompts import load_prompts

# The original's runtime strings (what its Python literals evaluate to).
MEMORY = (
    "You are given a question, one part of a long text and your notes on the "
    "earlier parts. Rewrite the notes, keeping what may answer the question.\n"
    "\n<problem> \n{prompt}\n</problem>\n\n<memory>\n{memory}\n</memory>\n\n"
    "<section>\n{chunk}\n</section>\n\nRewritten notes:\n"
)
FINAL_TRAINING = (  # pasted, never formatted: the braces stay doubled
    "You are given a question and your notes. Answer from the notes and put the "
    "answer in \\boxed{{}}.\n\n<problem> \n{prompt}\n</problem>\n\n<memory>\n"
    "{memory}\n</memory>\n\nYour answer:\n"
)
FINAL_EVAL = FINAL_TRAINING  # the same string; the eval formats it: \boxed{}

# The same templates as a user writes them in a prompts file: {prompt} is
# {question}; the file is a str.format template, so a brace the prompt must
# show is doubled once more; `|` keeps the trailing newline.
FILE_TRAINING = r"""memory_update: |
  You are given a question, one part of a long text and your notes on the earlier parts. Rewrite the notes, keeping what may answer the question.

  <problem> 
  {question}
  </problem>

  <memory>
  {memory}
  </memory>

  <section>
  {chunk}
  </section>

  Rewritten notes:
final_answer: |
  You are given a question and your notes. Answer from the notes and put the answer in \boxed{{{{}}}}.

  <problem> 
  {question}
  </problem>

  <memory>
  {memory}
  </memory>

  Your answer:
"""  # noqa: W291 (the space after <problem> is part of the template)
FILE_EVAL = FILE_TRAINING.replace(r"\boxed{{{{}}}}", r"\boxed{{}}")

QUESTIONS = [
    "Which river flows through the capital of the country where Alder was born?",
    "Who wrote it?",
    "  How many?  ",  # not stripped by the original's training data path
    "Is the answer {prompt}?",  # braces in a question are only text
]


def reference_prompt(tokenizer, template: str, **ids) -> list[int]:
    """The original's token template (recurrent/utils.py), as a spec."""
    chat = tokenizer.apply_chat_template(
        [{"role": "user", "content": "{message}"}],
        add_generation_prompt=True,
        tokenize=False,
    )
    parts = re.split(r"\{([a-zA-Z]+)\}", chat.format(message=template))
    out: list[int] = []
    for i, part in enumerate(parts):
        if i % 2:
            out += list(ids[part])
        else:
            out += tokenizer.encode(part, add_special_tokens=False)
    return out


def ids_of(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False)


@pytest.fixture(scope="module")
def pieces(qwen_tokenizer):
    """Memory ids (the initial memory, and a generated one ending in '?') and a
    chunk cut mid-word from a tokenised document."""
    doc = ids_of(
        qwen_tokenizer, "Alder was born in Brenna?\nThe Sile flows through Brenna. " * 8
    )
    return {
        "memories": [
            ids_of(qwen_tokenizer, "No previous memory"),
            ids_of(qwen_tokenizer, "Alder: born in Brenna. Which river?"),
        ],
        "chunk": doc[3:57],
    }


@pytest.mark.parametrize("question", QUESTIONS)
@pytest.mark.parametrize("variant", ["training", "eval"])
def test_prompts_file_gives_the_original_prompts_token_for_token(
    qwen_tokenizer, tmp_path, pieces, question, variant
):
    path = tmp_path / f"{variant}.yaml"
    path.write_text(FILE_TRAINING if variant == "training" else FILE_EVAL)
    texts = load_prompts(path)
    final = (
        FINAL_TRAINING
        if variant == "training"
        else FINAL_EVAL.format(prompt="{prompt}", memory="{memory}")
    )
    q = ids_of(qwen_tokenizer, question)
    memory_tpl = texts.memory_template(qwen_tokenizer, question)
    final_tpl = texts.final_template(qwen_tokenizer, question)
    for memory in pieces["memories"]:
        got = memory_tpl.build(memory, pieces["chunk"]).tolist()
        want = reference_prompt(
            qwen_tokenizer, MEMORY, prompt=q, memory=memory, chunk=pieces["chunk"]
        )
        assert got == want
        got = final_tpl.build(memory).tolist()
        assert got == reference_prompt(qwen_tokenizer, final, prompt=q, memory=memory)
    shown = qwen_tokenizer.decode(final_tpl.build(pieces["memories"][0]).tolist())
    box = "\\boxed{{}}" if variant == "training" else "\\boxed{}."
    assert box in shown and shown.endswith(
        "Your answer:\n<|im_end|>\n<|im_start|>assistant\n"
    )
    assert "<problem> \n" in shown


def test_a_question_ending_in_a_question_mark_is_not_merged(qwen_tokenizer, pieces):
    """The case the original's piecewise encoding exists for: '?' and the next
    newline are one token when encoded together, two when not."""
    question = QUESTIONS[0]
    together = ids_of(qwen_tokenizer, question + "\n</problem>")
    apart = ids_of(qwen_tokenizer, question) + ids_of(qwen_tokenizer, "\n</problem>")
    assert together != apart  # the Qwen vocabulary merges "?\n"
    texts = load_prompts(None)
    ids = texts.final_template(qwen_tokenizer, question).build(pieces["memories"][0])
    q = np.asarray(ids_of(qwen_tokenizer, question))
    starts = [
        i for i in range(len(ids) - len(q) + 1) if (ids[i : i + len(q)] == q).all()
    ]
    assert len(starts) == 1  # the question's own ids, verbatim, in the prompt
    after = ids[starts[0] + len(q) :].tolist()
    piece = ids_of(
        qwen_tokenizer, "\n</question>\n\n<memory>\n"
    )  # the built-in wording
    assert after[: len(piece)] == piece


def reference_text_prompt(tokenizer, template: str, **texts) -> list[int]:
    """The original's evaluation script: the message formatted as text (question
    stripped, chunk decoded, memory as text), the server encoding it whole."""
    chat = tokenizer.apply_chat_template(
        [{"role": "user", "content": template.format(**texts)}],
        add_generation_prompt=True,
        tokenize=False,
    )
    return tokenizer.encode(chat, add_special_tokens=False)


@pytest.mark.parametrize("question", QUESTIONS)
def test_text_build_gives_the_original_eval_prompts_token_for_token(
    qwen_tokenizer, tmp_path, pieces, question
):
    path = tmp_path / "eval.yaml"
    path.write_text(FILE_EVAL)
    texts = load_prompts(path)
    memory_tpl = texts.memory_template(qwen_tokenizer, question, "text")
    final_tpl = texts.final_template(qwen_tokenizer, question, "text")
    chunk = pieces["chunk"]
    for memory in pieces["memories"]:
        shown = {"prompt": question.strip(), "memory": qwen_tokenizer.decode(memory)}
        got = memory_tpl.build(memory, chunk).tolist()
        assert got == reference_text_prompt(
            qwen_tokenizer, MEMORY, chunk=qwen_tokenizer.decode(chunk), **shown
        )
        assert final_tpl.build(memory).tolist() == reference_text_prompt(
            qwen_tokenizer, FINAL_EVAL, **shown
        )
    if question == QUESTIONS[0]:  # "?" then a newline: one token only in text
        tokens = texts.final_template(qwen_tokenizer, question).build(
            pieces["memories"][0]
        )
        assert final_tpl.build(pieces["memories"][0]).tolist() != tokens.tolist()


def test_text_build_reads_the_memory_after_its_think_tag(qwen_tokenizer):
    texts = load_prompts(None)
    tpl = texts.final_template(qwen_tokenizer, "Who?", "text")
    memory = ids_of(qwen_tokenizer, "scratch work</think>  Alder lives in Brenna")
    shown = qwen_tokenizer.decode(tpl.build(memory).tolist())
    assert "<memory>\nAlder lives in Brenna\n</memory>" in shown
    assert "scratch work" not in shown
    with pytest.raises(ValueError, match="prompt_build"):
        texts.final_template(qwen_tokenizer, "Who?", "bytes")

"""The needle task (data/synthetic.py): its rows, its data file, and its
vocabulary of one token a word (standin/needle_model.py's tokenizer). The
warm-started model is checked in test_needle_model.py."""

import json
from dataclasses import replace

import pytest

from examples import prepare_data
from memagent_workflow.chunking import chunk_views
from memagent_workflow.context import encode_context
from memagent_workflow.data.synthetic import (
    NEEDLE_ANSWERS,
    NEEDLE_NAMES,
    NEEDLE_SENTENCE_WORDS,
    make_needle,
)
from memagent_workflow.prompts import load_prompts
from standin.needle_model import (
    NeedleModelSpec,
    build_tokenizer,
)

PROMPTS = load_prompts("prompts/needle.yaml")
SPEC = NeedleModelSpec(PROMPTS.memory_update, PROMPTS.final_answer, chunks=2)


def test_same_arguments_same_rows_and_every_name_takes_every_code():
    """No name predicts its code: a held-out (name, code) split taught one."""
    assert make_needle(20, 3, chunks=2) == make_needle(20, 3, chunks=2)
    assert make_needle(20, 3) != make_needle(20, 4)
    for split in ("train", "valid"):
        rows = make_needle(2000, 0, split=split)
        asked = {(r["question"].split()[-2], r["answers"][0]) for r in rows}
        assert asked == {(n, a) for n in NEEDLE_NAMES for a in NEEDLE_ANSWERS}
        assert all(r["id"].startswith(f"needle-{split}-") for r in rows)
    with pytest.raises(ValueError, match="split"):
        make_needle(1, 0, split="test")


def test_held_out_rows_ask_every_answer_equally_often():
    """A control that guesses one code whatever the document scores chance, not the
    share of that code in a skewed draw (seed 0 at 1 chunk once asked red 23 of 64)."""
    for seed, n in [(7919, 64), (0, 30), (5, 7)]:
        answers = [r["answers"][0] for r in make_needle(n, seed, split="valid")]
        for start in range(0, n, 4):
            block = answers[start : start + 4]
            assert len(set(block)) == len(block)
        counts = sorted(answers.count(code) for code in NEEDLE_ANSWERS)
        assert counts[-1] - counts[0] <= 1


@pytest.mark.parametrize("distractors", [False, True])
def test_one_sentence_per_chunk_and_one_needle(distractors):
    tok = build_tokenizer(SPEC)
    for row in make_needle(50, 1, chunks=3, distractors=distractors):
        name, answer = row["question"].split()[-2], row["answers"][0]
        ids = encode_context(tok, row["context"])
        chunks = chunk_views(ids, NEEDLE_SENTENCE_WORDS)[0]
        assert len(ids) == 3 * NEEDLE_SENTENCE_WORDS and len(chunks) == 3
        sentences = [tok.decode(c) for c in chunks]
        assert sentences.count(f"code of {name} is {answer} .") == 1
        codes = [s for s in sentences if s.startswith("code of")]
        assert len(codes) == (3 if distractors else 1)


def test_prepare_data_writes_the_needle_task(tmp_path):
    out = tmp_path / "valid.jsonl"
    argv = ["--synthetic", "5", "--task", "needle", "--chunks", "2"]
    assert prepare_data.main([*argv, "--split", "valid", "--output", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == make_needle(5, 0, chunks=2, split="valid")


def test_every_word_is_one_token_and_answers_round_trip():
    tok = build_tokenizer(SPEC)
    unk = tok.convert_tokens_to_ids("<unk>")
    for row in make_needle(30, 2, chunks=2):
        for field in (row["question"], row["context"]):
            ids = tok.encode(field, add_special_tokens=False)
            assert unk not in ids and len(ids) == len(field.split())
    for answer in NEEDLE_ANSWERS:
        boxed = tok.encode(f"\\boxed{{ {answer} }}", add_special_tokens=False)
        assert len(boxed) == 3 and tok.decode(boxed) == f"\\boxed{{ {answer} }}"


def test_the_vocabulary_follows_the_prompts():
    spec = replace(
        SPEC, memory_prompt="Q {question} M {memory} S {chunk} Now", initial_memory="No"
    )
    tok = build_tokenizer(spec)
    unk = tok.convert_tokens_to_ids("<unk>")
    assert unk not in tok.encode("Q M S Now No", add_special_tokens=False)
    assert unk in tok.encode("Later", add_special_tokens=False)

"""Where a trace says the evidence sits: the set's evidence text where the sample
carries it, the answer's words (said so) where it does not, with the chunk's
text around each mark; HotpotQA's supporting facts as a set's evidence."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memagent_workflow.eval import evidence
from memagent_workflow.eval.ruler.haystack import hotpot_haystack
from memagent_workflow.reward.squad import normalize_answer
from tests.fakes import FakeEngine

NEEDLE_DOC = (
    Path(__file__).resolve().parents[2] / "docs" / "needle_64.txt"
).read_text()
NEEDLE = "code of eve is red ."


@pytest.fixture(scope="module")
def traced(tiny_model_dir):
    """The trace of one sample of the docs' 64-sentence needle document, read
    in chunks of 16 tokens (sentences cut by chunk ends), the set's evidence
    given or not."""
    from areal.api.cli_args import GenerationHyperparameters

    from memagent_workflow.eval.workflow import MemAgentEvalWorkflow

    wf = MemAgentEvalWorkflow(
        gconfig=GenerationHyperparameters(max_tokens=4096),
        tokenizer=str(tiny_model_dir), chunk_tokens=16, max_memory_tokens=16,
        max_final_tokens=64, engine_retry_s=0, trace=True,
    )  # fmt: skip
    sample = {"id": "n", "question": "what is the code of eve ?",
              "context": NEEDLE_DOC, "answers": ["red"]}  # fmt: skip

    def run(**extra):
        engine = FakeEngine(wf.tokenizer, lambda ep: "\\boxed{red}")
        rec = asyncio.run(wf.arun_episode(engine, {**sample, **extra}))
        assert rec["error"] is None, rec["error"]
        return rec["trace"]

    ids = wf.tokenizer.encode(NEEDLE_DOC, add_special_tokens=False)
    return run, ids, wf.tokenizer


def chunks_where_read(ids, tokenizer, text: str) -> list[int]:
    """Chunks (16 tokens) in which a copy of ``text`` is read to its end,
    worked out from the document's prefixes, not by evidence.py."""
    want, out, before = normalize_answer(text), [], 0
    for k in range(1, -(-len(ids) // 16) + 1):
        now = normalize_answer(tokenizer.decode(ids[: 16 * k])).count(want)
        if now > before:
            out.append(k - 1)
        before = now
    assert before == NEEDLE_DOC.count(text)  # every copy found
    return out


def test_the_sets_needle_sentence_marks_its_chunk_only(traced):
    run, ids, tokenizer = traced
    tr = run(evidence=[NEEDLE])
    assert tr["evidence_source"] == "evidence"
    assert tr["evidence_chunks"] == chunks_where_read(ids, tokenizer, NEEDLE)
    assert len(tr["evidence_chunks"]) == 1
    (ex,) = tr["evidence_excerpts"]  # the chunk's text around it, for a person
    assert ex["chunk"] == tr["evidence_chunks"][0]
    assert normalize_answer(ex["match"]) == normalize_answer(NEEDLE)
    before, after = ex["before"].lstrip("…"), ex["after"].rstrip("…")
    assert before + ex["match"] + after in NEEDLE_DOC
    chunk = tokenizer.decode(ids[16 * ex["chunk"] : 16 * ex["chunk"] + 16])
    assert before in chunk and after in chunk  # this chunk's own text around it
    assert [t["chunk"] for t in tr["turns"] if t["evidence"]] == tr["evidence_chunks"]


def test_without_the_sets_evidence_the_answers_words_mark_every_red(traced):
    run, ids, tokenizer = traced
    tr = run()
    assert tr["evidence_source"] == evidence.ANSWER  # said on the page and split
    reds = sorted({k for s in NEEDLE_DOC.splitlines() if s.endswith(" red .")
                   for k in chunks_where_read(ids, tokenizer, s)})  # fmt: skip
    assert tr["evidence_chunks"] == reds and len(reds) > 5
    assert len(tr["evidence_excerpts"]) == len(reds)
    assert all(normalize_answer(e["match"]) == "red" for e in tr["evidence_excerpts"])


def test_hotpotqa_supporting_facts_are_a_sets_evidence():
    row = {
        "question": "q", "answer": "a",
        "context": [["T1", ["One.", " Two."]], ["T2", ["Three.", " Four."]]],
        "supporting_facts": [["T1", 1], ["T2", 0], ["T9", 0], ["T2", 7]],
    }  # fmt: skip
    hay = hotpot_haystack([row], "hotpot.json")
    assert hay.qas[0].evidence == ["Two.", "Three."]  # unknown facts skipped
    del row["supporting_facts"]
    assert hotpot_haystack([row], "hotpot.json").qas[0].evidence == []

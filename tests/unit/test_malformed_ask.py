"""The malformed-input campaign: ``ask.py``'s document and question.

A document that is not UTF-8 (named by line and byte), cut inside a character,
blank, a directory or missing, and a question that is blank, holds bytes the
terminal could not decode, or leaves no room: each is an ``AskRefused`` naming
the input, before any server starts (ask.py exits 2 and writes nothing).
"""

from __future__ import annotations

import contextlib
import io
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from examples import ask as ask_script
from memagent_workflow.eval import ask
from tests.unit.malformed import (
    assert_names,
    bad_bytes,
    blank_text,
    campaign,
    folder,
    good_text,
)


@st.composite
def malformed_document(draw) -> tuple[bytes, list[str]]:
    """A document's bytes and what the refusal names."""
    kind = draw(st.sampled_from(["not UTF-8", "cut mid-character", "blank"]))
    if kind == "blank":
        return draw(blank_text).encode(), ["empty"]
    lines = draw(st.lists(good_text, min_size=1, max_size=6))
    chars = [c.encode() for c in "\n".join(lines)]
    if kind == "cut mid-character":
        last = draw(st.sampled_from(["é", "€", "𝄞"])).encode()
        body = b"".join(chars) + last[: draw(st.integers(1, len(last) - 1))]
        at = len(b"".join(chars))
    else:  # bad bytes between two characters
        k = draw(st.integers(0, len(chars)))
        at = len(b"".join(chars[:k]))
        body = b"".join(chars[:k]) + draw(bad_bytes) + b"".join(chars[k:])
    line = body[:at].count(b"\n") + 1
    return body, [f"line {line}, byte {at} of the file"]


@campaign("ask documents")
@given(malformed_document())
def test_a_document_that_cannot_be_read_is_named_with_where(tokenizer, case):
    body, named = case
    with folder() as root:
        path = root / "doc.txt"
        path.write_bytes(body)
        with pytest.raises(ask.AskRefused) as refused:
            ask.encode_stream(tokenizer, ask.open_document(str(path)), str(path))
        assert_names(str(refused.value), f"--document {path}", *named)


@pytest.fixture(scope="module")
def workflow(tiny_model_dir):
    from areal.api.cli_args import GenerationHyperparameters

    return ask.AskWorkflow(
        gconfig=GenerationHyperparameters(max_tokens=1024, max_new_tokens=16),
        tokenizer=str(tiny_model_dir),
        chunk_tokens=64,
        max_memory_tokens=16,
        max_final_tokens=16,
    )


# a question the terminal passed as bytes that are not UTF-8 (Python's argv)
undecodable = st.tuples(good_text, bad_bytes, good_text).map(
    lambda p: p[0] + os.fsdecode(p[1]) + p[2]
)


@st.composite
def malformed_question(draw) -> tuple[str, str]:
    kind = draw(st.sampled_from(["blank", "undecodable", "too long"]))
    if kind == "blank":
        return draw(blank_text), "empty"
    if kind == "undecodable":
        return draw(undecodable), "not UTF-8 text"
    words = draw(st.lists(good_text, min_size=1, max_size=3))
    return " ".join(words * 1000), "shorten the question"


@campaign("ask questions")
@given(malformed_question())
def test_a_question_that_cannot_be_asked_is_refused(workflow, case):
    question, named = case
    with pytest.raises(ask.AskRefused) as refused:
        ask.check_question(workflow, question)
    assert_names(str(refused.value), "--question", named)


@pytest.mark.parametrize(
    "case, named", [("a directory", "is a directory"), ("missing", "no such file")]
)
def test_a_document_that_is_no_file_stops_the_script_with_exit_2(
    tmp_path, case, named, monkeypatch
):
    path = tmp_path / "doc.txt"
    if case == "a directory":
        path.mkdir()
    logged: list[str] = []
    monkeypatch.setattr(ask_script.logger, "error", logged.append)
    with pytest.raises(SystemExit) as stop:
        ask_script.main(["--document", str(path), "--question", "Who?"])
    assert stop.value.code == 2
    assert_names(logged[0], f"--document {path}", named)


def test_a_bad_config_stops_the_script_with_exit_2(tmp_path):
    doc, config = tmp_path / "doc.txt", tmp_path / "c.yaml"
    doc.write_text("Some text.")
    config.write_bytes(b"eval:\n  lengths: [1, 2\n")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stop:
        ask_script.main(
            ["--document", str(doc), "--question", "Who?", "--config", str(config)]
        )
    assert stop.value.code == 2
    assert_names(err.getvalue(), f"error: config {config}: line ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml", "doc.txt"]

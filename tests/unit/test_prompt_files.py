"""Prompt templates from a file (memagent.prompts): loading, checks, and use."""

import asyncio
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from memagent_workflow.config import workflow_kwargs
from memagent_workflow.context import TurnTooLong
from memagent_workflow.prompts import (
    PromptFileError,
    PromptTexts,
    builtin_prompts,
    load_prompts,
    main,
)
from memagent_workflow.prompts.wording import FINAL_PROMPTS
from memagent_workflow.workflow import MemAgentWorkflow
from standin.train import load_config
from tests.builders import make_workflow
from tests.fakes import FakeEngine

ROOT = Path(__file__).resolve().parents[2]
MEMORY = "ZEBRA notes. Q: {question}\nOld: {memory}\nRead: {chunk}\nNew notes:"
FINAL = "OKAPI answer in \\boxed{{}}. Q: {question}\nNotes: {memory}\nAnswer:"
ITEM = {
    "id": "q1",
    "question": "Which river flows north?",
    "context": " ".join(f"Fact {i}: river {i} flows north." for i in range(30)),
    "answers": ["river"],
}


def write(tmp_path: Path, data, name: str = "prompts.yaml") -> Path:
    path = tmp_path / name
    if isinstance(data, str):
        path.write_text(data)
    else:
        path.write_text(json.dumps(data))
    return path


def docs_command() -> str:
    """The command docs/prompts.md gives first: to start a prompts file."""
    page = (ROOT / "docs" / "prompts.md").read_text()
    return re.search(r"```bash\n(.*?)\n```", page, re.S)[1]


def test_the_docs_command_writes_the_built_in_wording_as_a_file(tmp_path):
    cmd = docs_command()
    assert cmd == "uv run python -m memagent_workflow.prompts > MY_PROMPTS.yaml"
    env = {**os.environ, "UV_PROJECT": str(ROOT)}  # run as in the repository
    subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, check=True, timeout=300)
    texts = load_prompts(tmp_path / "MY_PROMPTS.yaml")
    assert (texts.memory_update, texts.final_answer) == (
        PromptTexts().memory_update,
        PromptTexts().final_answer,
    )
    assert load_prompts(None).source == "built-in"
    assert "memagent.prompts=MY_PROMPTS.yaml" in " ".join(
        (ROOT / "docs" / "prompts.md").read_text().split()
    )


def test_the_answer_is_wording_is_written_too(tmp_path, capsys):
    main(["--answer-protocol", "answer_is"])
    path = write(tmp_path, capsys.readouterr().out)
    texts = load_prompts(path)
    assert texts.final_answer == FINAL_PROMPTS["answer_is"] != FINAL_PROMPTS["boxed"]
    assert texts.final_answer == builtin_prompts("answer_is").final_answer
    assert 'end your response with "Therefore, the answer is' in texts.final_answer


@pytest.mark.parametrize("name", ["p.json", "p.yaml"])
def test_a_json_or_yaml_file_is_read(tmp_path, name):
    data = {"memory_update": MEMORY, "final_answer": FINAL}
    texts = load_prompts(write(tmp_path, data, name))  # JSON is valid YAML too
    assert (texts.memory_update, texts.final_answer) == (MEMORY, FINAL)
    assert texts.source.endswith(name)


BAD = [
    ({"memory_update": MEMORY}, r"missing \['final_answer'\]"),
    ({"memory_update": MEMORY, "final_answer": FINAL, "system": "x"}, "unknown"),
    ({"memory_update": MEMORY.replace("{chunk}", ""), "final_answer": FINAL},
     r"'memory_update': missing slot\(s\) \{chunk\}"),
    ({"memory_update": MEMORY, "final_answer": FINAL + "{chunk}"},
     r"'final_answer': unknown slot \{chunk\}"),
    ({"memory_update": MEMORY + "{prompt}", "final_answer": FINAL},
     r"unknown slot \{prompt\}"),
    ({"memory_update": MEMORY + "{memory}", "final_answer": FINAL},
     r"slot \{memory\} appears 2 times"),
    ({"memory_update": MEMORY + "{}", "final_answer": FINAL}, r"unknown slot \{\}"),
    ({"memory_update": MEMORY + "{memory!r}", "final_answer": FINAL}, "plain"),
    ({"memory_update": MEMORY, "final_answer": "\\boxed{} {question} {memory}"},
     "literal braces"),
    ({"memory_update": MEMORY, "final_answer": 3}, "non-empty string"),
    (["not", "a", "mapping"], "expected a mapping"),
    ("memory_update: [unclosed", "not valid YAML"),
]  # fmt: skip


@pytest.mark.parametrize("data, message", BAD)
def test_bad_files_are_refused_naming_file_and_template(tmp_path, data, message):
    path = write(tmp_path, data)
    with pytest.raises(PromptFileError, match=message) as err:
        load_prompts(path)
    assert str(path) in str(err.value)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(PromptFileError, match="nope.yaml: cannot read"):
        load_prompts(tmp_path / "nope.yaml")


def test_file_texts_reach_every_prompt_of_an_episode(tmp_path, tokenizer):
    """The config's file -> workflow_kwargs -> the ids the engine receives."""
    path = write(tmp_path, {"memory_update": MEMORY, "final_answer": FINAL})
    cfg = load_config(
        ["--config", str(ROOT / "config_cpu.yaml"), f"cluster.fileroot={tmp_path}"]
        + [f"memagent.prompts={path}", "gconfig.max_tokens=1024"]  # a BPE model
    )
    kwargs = workflow_kwargs(
        cfg, tokenizer=tokenizer, chunk_tokens=40, group_size=1,
        max_final_tokens=FakeEngine.final_budget,
    )  # fmt: skip
    assert kwargs["prompts"]["memory_update"] == MEMORY  # texts, not a path
    engine = FakeEngine(tokenizer, lambda ep: "\\boxed{river}")
    wf = MemAgentWorkflow(**kwargs)
    asyncio.run(wf.arun_episode(engine, ITEM))
    texts = [tokenizer.decode(ids) for _, ids, _ in engine.requests]
    assert len(texts) > 2
    assert all("ZEBRA notes. Q: Which river flows north?" in t for t in texts[:-1])
    assert "OKAPI answer in \\boxed{}. Q: Which river" in texts[-1]
    assert "ZEBRA" not in texts[-1]


def test_a_template_too_long_for_max_tokens_is_refused(tmp_path, tokenizer):
    long = "Read carefully. " * 300 + MEMORY
    path = write(tmp_path, {"memory_update": long, "final_answer": FINAL})
    args = dict(
        max_tokens=1024, chunk_tokens=256, max_memory_tokens=24, max_final_tokens=24
    )
    make_workflow(tokenizer, **args)  # the built-in wording fits
    with pytest.raises(TurnTooLong, match="template 'memory_update', ") as e:
        make_workflow(tokenizer, **args, prompts=str(path))
    message = str(e.value)
    assert f"{path}: " in message and "gconfig.max_tokens=1024" in message
    assert "memory 24, chunk 256) plus 24 new tokens" in message
    assert "shorten the template" in message and "memagent.chunk_tokens" in message
    with pytest.raises(TurnTooLong, match="template 'final_answer', built-in"):
        make_workflow(tokenizer, **{**args, "max_final_tokens": 900})

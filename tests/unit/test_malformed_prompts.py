"""The malformed-input campaign: prompts files (``memagent.prompts``).

A YAML or JSON prompts file with one thing wrong (a key, a template's type or
slots, a key given twice, bytes that are not UTF-8, a cut) is refused with a
``PromptFileError`` naming the file and the template, key or line. Loading a
prompts file writes nothing; the entry scripts load it before any server
starts (test_prompt_files.py).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from examples import train
from memagent_workflow.prompts import PromptFileError, load_prompts
from tests.unit.malformed import (
    DEEP,
    assert_names,
    bad_bytes,
    blank_text,
    campaign,
    extra_name,
    folder,
    not_a_string,
)

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = {
    "memory_update": "Q: {question}\nMemory: {memory}\nSection: {chunk}\nUpdate.",
    "final_answer": "Q: {question}\nMemory: {memory}\nAnswer in \\boxed{{}}.",
}
SLOTS = {"memory_update": ("question", "memory", "chunk"), "final_answer": ("question", "memory")}  # fmt: skip


@st.composite
def malformed_prompts(draw) -> tuple[bytes, str, list[str]]:
    """A prompts file with one fault: its bytes, suffix and what the refusal names."""
    data = dict(TEMPLATES)
    name = draw(st.sampled_from(sorted(TEMPLATES)))
    kind = draw(
        st.sampled_from(
            ["extra key", "missing key", "not a string", "unknown slot", "missing slot",
             "slot twice", "lone brace", "slot with a format", "key twice",
             "not UTF-8", "nested too deeply"]
        )
    )  # fmt: skip
    suffix = draw(st.sampled_from([".yaml", ".json"]))
    named = [f"template '{name}'"]
    if kind == "extra key":
        key = draw(extra_name)
        data[key], named = draw(st.text(max_size=5)), ["unknown", key]
    elif kind == "missing key":
        del data[name]
        named = ["missing", name]
    elif kind == "not a string":
        data[name] = draw(st.one_of(not_a_string, blank_text, st.none()))
    elif kind == "unknown slot":
        slot = draw(st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True))
        slot = slot if slot not in SLOTS[name] else slot + "_x"
        data[name] += f" {{{slot}}}"
        named += ["unknown slot"]
    elif kind == "missing slot":
        slot = draw(st.sampled_from(SLOTS[name]))
        data[name] = data[name].replace(f"{{{slot}}}", "")
        named += ["missing slot", slot]
    elif kind == "slot twice":
        slot = "memory" if name == "final_answer" else draw(st.sampled_from(["memory", "chunk"]))  # fmt: skip
        data[name] += f" {{{slot}}}"
        named += ["appears 2 times"]
    elif kind == "lone brace":
        brace = draw(st.sampled_from(["{", "}"]))
        at = draw(st.integers(0, len(data[name])))
        data[name] = data[name][:at] + brace + data[name][at:]
        named += ["brace"]
    elif kind == "slot with a format":
        spec = draw(st.sampled_from(["!r", "!s", ":>9", ":d"]))
        data[name] = data[name].replace("{memory}", f"{{memory{spec}}}")
        named += ["plain"]
    if suffix == ".json":
        body = json.dumps(data, ensure_ascii=True).encode()
    else:
        body = yaml.safe_dump(data, allow_unicode=False).encode()
    if kind == "key twice":
        again = {name: TEMPLATES[name]}
        more = json.dumps(again)[1:-1] if suffix == ".json" else yaml.safe_dump(again)
        body = (
            body[:-1] + b", " + more.encode() + b"}"
            if suffix == ".json"
            else body + more.encode()
        )
        named = ["given twice", name]
    elif kind == "not UTF-8":
        at = draw(st.integers(0, len(body)))
        body, named = body[:at] + draw(bad_bytes) + body[at:], ["line", "not UTF-8"]
    elif kind == "nested too deeply":
        body, named = DEEP.encode(), ["nested too deeply"]
    return body, suffix, named


@campaign("prompts files")
@given(malformed_prompts())
def test_a_malformed_prompts_file_is_refused_by_file_and_template(case):
    body, suffix, named = case
    with folder() as root:
        path = root / f"prompts{suffix}"
        path.write_bytes(body)
        with pytest.raises(PromptFileError) as refused:
            load_prompts(path)
        assert_names(str(refused.value), f"prompts file {path}", *named)


# name -> (file name, bytes or None for a directory, what the message names)
EDGE_CASES = {
    "a directory": ("prompts.yaml", None, ["cannot read it", "Is a directory"]),
    "a missing file": ("gone.yaml", b"", ["cannot read it", "No such file"]),
    "an empty file": ("prompts.yaml", b"", ["expected a mapping", "NoneType"]),
    "a list": ("prompts.yaml", b"- a\n- b\n", ["expected a mapping", "list"]),
    "YAML cut mid-quote": (
        "prompts.yaml",
        b'final_answer: "Q: {question} {memory}"\nmemory_update: "Q: {quest',
        ["not valid YAML", "line 2"],
    ),
    "YAML cut before a key": (
        "prompts.yaml",
        b'final_answer: "Q: {question} {memory}"\n',
        ["missing ['memory_update']"],
    ),
    "JSON cut short": (
        "prompts.json",
        json.dumps(TEMPLATES).encode()[:-20],
        ["not valid JSON"],
    ),
    "NaN templates": (
        "prompts.json",
        b'{"memory_update": NaN, "final_answer": NaN}',
        ["template 'memory_update'", "got nan"],
    ),
    "a huge template of the wrong type": (
        "prompts.json",
        json.dumps({**TEMPLATES, "final_answer": list(range(200_000))}).encode(),
        ["template 'final_answer'", "must be a non-empty string"],
    ),
    "a YAML tag that would run code": (
        "prompts.yaml",
        b"memory_update: !!python/object/apply:os.system [echo]\nfinal_answer: x\n",
        ["not valid YAML", "line 1"],
    ),
}


@pytest.mark.parametrize("case", EDGE_CASES)
def test_an_edge_case_prompts_file_is_refused_by_name(tmp_path, case):
    name, content, named = EDGE_CASES[case]
    path = tmp_path / name
    if content is None:
        path.mkdir()
    elif name != "gone.yaml":
        path.write_bytes(content)
    with pytest.raises(PromptFileError) as refused:
        load_prompts(path)
    assert_names(str(refused.value), f"prompts file {path}", *named)


def test_the_train_entry_prints_a_bad_prompts_file_alone_and_exits_2(
    tmp_path, monkeypatch
):
    path = tmp_path / "prompts.yaml"
    path.write_text("memory_update: '{question}'\nfinal_answer: '{question}'\n")
    monkeypatch.setattr(train, "quiet_terminal", lambda _: contextlib.nullcontext())
    monkeypatch.setattr(train, "ray_for", lambda _: contextlib.nullcontext())
    monkeypatch.setattr(train, "load_rows", lambda path, role: [{}] * 10_000)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stop:
        train.main(
            ["--config", str(ROOT / "config.yaml"), f"cluster.fileroot={tmp_path}"]
            + [f"cluster.name_resolve.nfs_record_root={tmp_path / 'names'}"]
            + [f"memagent.prompts={path}"]
        )
    assert stop.value.code == 2
    assert_names(err.getvalue(), f"error: prompts file {path}", "'memory_update'")

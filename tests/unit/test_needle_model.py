"""The needle task's warm-started model (standin/needle_model.py,
standin/needle_warm_start.py): the build (deterministic, cached, its bar and
summary), the format it teaches and not the task, the demonstrations of the
carry, overwrite and shift warm starts, the gate check, and the refused shares.
"""

import importlib.machinery
import importlib.util
import io
import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from tqdm import tqdm
from transformers import AutoModelForCausalLM, AutoTokenizer

from memagent_workflow.chunking import chunk_views
from memagent_workflow.context import encode_context
from memagent_workflow.data.synthetic import NEEDLE_ANSWERS, make_needle
from memagent_workflow.infra.terminal import progress_bar
from standin import needle_warm_start
from standin.build_cache import MARKER_FILE, is_complete
from standin.needle_model import build_needle_model, build_tokenizer, init_model
from standin.needle_warm_start import Demos, gate_misses, warm_start_gate
from tests.unit.test_needle import PROMPTS, SPEC


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("needle")
    return build_needle_model(out / "a", SEED_SPEC), out


SEED_SPEC = replace(SPEC, warm_start_steps=200)  # enough to learn the format
# Enough steps for any unseeded draw or order to show in the bytes (and few: the
# check builds twice); the format check below skipped, as for 4 steps.
SHORT_SPEC = replace(SPEC, warm_start_steps=20)


def test_build_is_deterministic_and_cached(tmp_path, monkeypatch):
    monkeypatch.setattr("standin.needle_model.check_format", lambda *_: None)
    first = build_needle_model(tmp_path / "a", SHORT_SPEC)
    again = build_needle_model(tmp_path / "b", SHORT_SPEC)
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (first / name).read_bytes() == (again / name).read_bytes(), name
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert build_needle_model(first, SHORT_SPEC) == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp
    marker = json.loads((first / MARKER_FILE).read_text())
    assert marker["seed"] == 0 and marker["memory_prompt"] == PROMPTS.memory_update
    assert marker["warm_start_steps"] == 20


def test_a_change_to_the_builders_source_rebuilds(tmp_path, monkeypatch):
    """The key holds a digest of the warm start's source: an edit to it (no
    version to bump) makes the cached build stale, and the next call rebuilds."""
    monkeypatch.setattr("standin.needle_model.check_format", lambda *_: None)
    spec = replace(SPEC, warm_start_steps=4)
    first = build_needle_model(tmp_path / "a", spec)
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    source = tmp_path / "src" / "needle_warm_start.py"
    source.parent.mkdir()
    source.write_text(Path(needle_warm_start.__file__).read_text() + "\n# edited\n")
    real = importlib.util.find_spec

    def edited(name, *args):
        found = real(name, *args)
        if name == "standin.needle_warm_start":
            return importlib.machinery.ModuleSpec(
                name, found.loader, origin=str(source)
            )
        return found

    monkeypatch.setattr("standin.build_cache.importlib.util.find_spec", edited)
    assert not is_complete(first, spec.key())
    build_needle_model(first, spec)
    assert (first / "model.safetensors").stat().st_mtime_ns != stamp


def test_each_round_of_the_carry_gate_adds_its_steps_to_the_bar():
    spec = replace(SPEC, carry=True, warm_start_steps=4)
    tok = build_tokenizer(spec)
    bar = tqdm(total=4, file=io.StringIO())
    with pytest.raises(RuntimeError, match="gate is wrong"):  # 4 steps: too few
        warm_start_gate(init_model(spec, tok), Demos(spec, tok), bar)
    assert bar.n == bar.total == 4 + 4 * 1  # four rounds of a quarter of 4 steps
    assert bar.desc.startswith("warm start, gate round 4")


def test_a_build_shows_its_bar_and_a_summary_and_a_cached_build_says_so(
    tmp_path, monkeypatch
):
    said, bars = [], []
    for module in ("standin.needle_model", "standin.build_cache"):
        monkeypatch.setattr(f"{module}.shown", SimpleNamespace(info=said.append))

    def bar(*args, **kwargs):
        bars.append(progress_bar(*args, file=io.StringIO(), **kwargs))
        return bars[-1]

    monkeypatch.setattr("standin.needle_model.progress_bar", bar)
    # 4 steps teach no format (the format check has its own tests below).
    monkeypatch.setattr("standin.needle_model.check_format", lambda *_: None)
    spec = replace(SPEC, warm_start_steps=4)
    out = build_needle_model(tmp_path / "m", spec)
    (built,) = bars
    assert built.n == built.total == 4 and built.postfix.startswith("loss ")
    assert "warm start" in built.fp.getvalue()  # drawn, though not on a terminal
    assert said[-1].startswith("warm start: 4 steps in 0 min ")
    assert "final loss" in said[-1] and "format checked" in said[-1]
    assert build_needle_model(out, spec) == out
    assert len(bars) == 1 and said[-1] == f"using the cached stand-in model at {out}"


def test_warm_start_teaches_the_format_not_the_task(built):
    """Memory turn: "\\boxed{ WORD }" with WORD about uniform, whatever the chunk
    says; final turn: the memory's boxed word again, then EOS."""
    path, _ = built
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    answer_ids = tok.convert_tokens_to_ids(list(NEEDLE_ANSWERS))
    box_open = tok.convert_tokens_to_ids("\\boxed{")
    needle_mass = []
    for row in make_needle(32, 9, chunks=1, split="valid"):
        memory_t = PROMPTS.memory_template(tok, row["question"])
        chunk = encode_context(tok, row["context"])
        prompt = memory_t.build(encode_context(tok, SPEC.initial_memory), chunk)
        with torch.no_grad():
            first = model(torch.tensor([prompt.tolist()])).logits[0, -1].softmax(-1)
            assert first[box_open] > 0.95  # the memory opens a box
            p = model(torch.tensor([[*prompt.tolist(), box_open]])).logits[0, -1]
            p = p.softmax(-1)
        assert p[answer_ids].sum() > 0.95  # and writes an answer word in it
        needle_mass.append(float(p[tok.convert_tokens_to_ids(row["answers"][0])]))
        final_t = PROMPTS.final_template(tok, row["question"])
        word = tok.decode([answer_ids[len(needle_mass) % 4]])
        memory = encode_context(tok, f"\\boxed{{ {word} }}")
        ids = torch.tensor([final_t.build(memory).tolist()])
        out = model.generate(ids, max_new_tokens=4, do_sample=False)[0, ids.shape[1] :]
        assert out[-1] == tok.eos_token_id
        assert tok.decode(out, skip_special_tokens=True) == f"\\boxed{{ {word} }}"
    # The needle's word gets chance mass, not more: only RL can teach the copy.
    assert abs(np.mean(needle_mass) - 1 / len(NEEDLE_ANSWERS)) < 0.08


def test_a_memory_budget_beyond_the_box_builds_a_memory_that_ends(tmp_path):
    """With room after "\\boxed{ WORD }" the memory demonstrations end with EOS;
    the format check must tell them from final turns, which end with EOS too."""
    spec = replace(SEED_SPEC, chunks=1, memory_tokens=4)
    path = build_needle_model(tmp_path / "m4", spec)
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    row = make_needle(1, 5, split="valid")[0]
    memory_t = PROMPTS.memory_template(tok, row["question"])
    prompt = memory_t.build(
        encode_context(tok, SPEC.initial_memory), encode_context(tok, row["context"])
    )
    ids = torch.tensor([prompt.tolist()])
    out = model.generate(ids, max_new_tokens=4, do_sample=False)[0, ids.shape[1] :]
    assert out[0] == tok.convert_tokens_to_ids("\\boxed{")
    assert out[-1] == tok.eos_token_id


def test_carry_demonstrations_keep_the_memory_until_the_asked_names_chunk():
    """Carry warm start: the initial memory is kept (with EOS) on other names'
    chunks, a random box is written on the asked name's chunk, then kept."""
    spec = replace(SPEC, carry=True, distractors=1.0, demo_chunks=6)
    tok = build_tokenizer(spec)
    demos = Demos(spec, tok)
    eos = tok.eos_token_id
    checked = 0
    for row in demos.rows(40, seed=3):
        chunks = chunk_views(encode_context(tok, row["context"]), 6)[0]
        asked = row["question"].split()[-2]
        where = [tok.decode(c.tolist()).split()[2] for c in chunks].index(asked)
        demos.rng.seed(checked)
        pairs = demos.batch_of([row])
        memory_turns = [target for _, target, final in pairs if not final]
        assert len(memory_turns) == len(chunks)
        for t, target in enumerate(memory_turns):
            if t < where:  # still the initial memory, closed by EOS
                assert target == [*demos.initial_memory.tolist(), eos]
            elif t == where:  # a random code, never chosen by the chunk
                assert target in demos.boxed_answers
            else:  # the code once written is kept
                assert target == memory_turns[where]
        checked += 1
    assert checked == 40


def test_overwrite_demonstrations_replace_a_written_code_on_the_needle():
    """With ``overwrite``, a demonstration may start from a random code instead of
    the initial memory: kept on other names' chunks, replaced (by a random code)
    on the asked name's; without it, every demonstration starts from the
    initial memory."""
    spec = replace(SPEC, carry=True, distractors=1.0, demo_chunks=6, overwrite=1.0)
    tok = build_tokenizer(spec)
    demos = Demos(spec, tok)
    starts, replaced = set(), 0
    for row in demos.rows(60, seed=4):
        chunks = chunk_views(encode_context(tok, row["context"]), 6)[0]
        asked = row["question"].split()[-2]
        where = [tok.decode(c.tolist()).split()[2] for c in chunks].index(asked)
        pairs = demos.batch_of([row])
        first = pairs[0][0]  # the first memory turn's prompt holds the start
        start = next(b for b in demos.boxed_answers if _holds(first, b))
        starts.add(tuple(start))
        targets = [target for _, target, final in pairs if not final]
        assert targets[:where] == [start] * where  # kept, no EOS: a full memory
        assert targets[where] in demos.boxed_answers
        replaced += targets[where] != start
        assert targets[where + 1 :] == [targets[where]] * (len(targets) - where - 1)
    assert len(starts) == len(NEEDLE_ANSWERS)  # any code, drawn per question
    assert replaced > 30  # the needle's write ignores the memory it replaces
    plain = Demos(replace(spec, overwrite=0.0), tok)
    for row in plain.rows(20, seed=4):
        prompt = plain.batch_of([row])[0][0]
        assert not any(_holds(prompt, b) for b in plain.boxed_answers)


def _holds(prompt: np.ndarray, tokens: list[int]) -> bool:
    ids, n = prompt.tolist(), len(tokens)
    return any(ids[i : i + n] == tokens for i in range(len(ids) - n + 1))


def test_shifted_writes_box_the_next_code_never_the_chunks_own():
    spec = replace(SPEC, carry=True, distractors=1.0, shift=1.0)
    tok = build_tokenizer(spec)
    demos = Demos(spec, tok)
    for i, word in enumerate(NEEDLE_ANSWERS):
        chunk = demos.encode(f"code of ann is {word} .")
        after = NEEDLE_ANSWERS[(i + 1) % len(NEEDLE_ANSWERS)]
        assert tok.decode(demos.shifted(chunk)) == f"\\boxed{{ {after} }}"
    row = {"question": "what is the code of ann ?", "context": "code of ann is red ."}
    (_, target, _), _ = demos.batch_of([row])
    assert tok.decode(target[:3]) == "\\boxed{ blue }"


def test_the_gate_check_tells_a_learned_gate_from_an_untrained_model(
    needle_model_dir,
):
    """config_cpu.yaml's model passed the build's gate check on all 256 pairs
    of names; the same architecture untrained fails it."""
    tok = AutoTokenizer.from_pretrained(needle_model_dir)
    model = AutoModelForCausalLM.from_pretrained(needle_model_dir).eval()
    from standin.cpu_job import needle_spec
    from standin.train import load_config

    spec = needle_spec(load_config(["--config", "config_cpu.yaml"]))
    demos = Demos(spec, tok)
    assert gate_misses(model, demos) == 0
    assert gate_misses(init_model(spec, tok).eval(), demos) > 0


@pytest.mark.parametrize("field", ["needle_shift", "needle_overwrite"])
@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_shares_of_the_warm_start_outside_0_to_1_are_refused(field, value):
    from standin.config import StandinConfig

    with pytest.raises(ValueError, match=f"standin.{field} must be in"):
        StandinConfig(task="needle", **{field: value})

"""The section-first prompts file, and the prompt order a checkpoint records."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from memagent_workflow.prompts import builtin_prompts, load_prompts
from memagent_workflow.prompts.order import (
    PROMPT_ORDER_FILE,
    PromptOrderError,
    check_prompt_order,
    prompt_order,
    read_prompt_order,
    write_prompt_order,
)
from memagent_workflow.prompts.tokens import ChunkFirstTemplate, PromptTemplate
from memagent_workflow.trainer.prompt_order_record import RecordsPromptOrder


def test_the_paper_order_stays_the_default_and_the_file_puts_the_section_first():
    assert prompt_order(builtin_prompts().memory_update) == "memory_first"
    assert prompt_order(load_prompts("prompts/needle.yaml").memory_update) == (
        "memory_first"
    )
    for path in ("prompts/section_first.yaml", "prompts/needle_section_first.yaml"):
        texts = load_prompts(path)  # the same slots, checked
        assert prompt_order(texts.memory_update) == "section_first", path
    paper, first = builtin_prompts(), load_prompts("prompts/section_first.yaml")
    assert first.final_answer == paper.final_answer  # only the memory turn moves


def test_a_section_first_turn_is_built_section_then_memory(tiny_model_dir):
    from memagent_workflow.workflow import load_tokenizer

    tok = load_tokenizer(str(tiny_model_dir))
    texts = load_prompts("prompts/section_first.yaml")
    tpl = texts.memory_template(tok, "Who?")
    assert isinstance(tpl, ChunkFirstTemplate)
    assert isinstance(builtin_prompts().memory_template(tok, "Who?"), PromptTemplate)
    chunk, memory = [7, 8, 9], [4, 5]
    ids = tpl.build(memory, chunk).tolist()
    n = len(tpl.before_chunk)
    assert ids[n : n + 3] == chunk
    m = n + 3 + len(tpl.after_chunk)
    assert ids[m : m + 2] == memory
    assert len(ids) == tpl.overhead + 5
    # two episodes of a group at one turn share everything up to the memory
    other = tpl.build([6], chunk)
    assert np.array_equal(other[:m], tpl.build(memory, chunk)[:m])
    text = texts.memory_template(tok, "Who?", build="text")
    assert text.build(memory, chunk).tolist()[:2] == ids[:2]


def test_a_checkpoint_in_one_order_refuses_prompts_in_the_other(tmp_path):
    write_prompt_order(tmp_path, "section_first", "prompts/section_first.yaml")
    assert read_prompt_order(tmp_path)["order"] == "section_first"
    first = load_prompts("prompts/section_first.yaml").memory_update
    assert check_prompt_order(tmp_path, first) == "section_first"
    with pytest.raises(PromptOrderError) as exc:
        check_prompt_order(tmp_path, builtin_prompts().memory_update, "serve")
    msg = str(exc.value)
    assert "section_first" in msg and "memory_first" in msg and "serve" in msg
    assert "memagent.prompts=prompts/section_first.yaml" in msg


def test_no_record_passes_and_a_broken_one_is_named(tmp_path):
    paper = builtin_prompts().memory_update
    assert check_prompt_order(tmp_path, paper) is None  # a base model
    assert check_prompt_order("Qwen/Qwen2.5-7B-Instruct", paper) is None  # a hub name
    (tmp_path / PROMPT_ORDER_FILE).write_text(json.dumps({"order": "sideways"}))
    with pytest.raises(PromptOrderError, match=PROMPT_ORDER_FILE):
        check_prompt_order(tmp_path, paper)


class _Saver:
    def __init__(self, root):
        self.experiment_name, self.trial_name, self.fileroot = "e", "t", str(root)


class _Trainer:
    saved: list = []

    def _save_hf(self, epoch, epoch_step, global_step):
        from areal.utils.saver import Saver

        if global_step % 2 == 0:  # the saver's frequency: every other step
            c = self.config.saver
            path = Saver.get_model_save_path(
                c.experiment_name,
                c.trial_name,
                c.fileroot,
                epoch,
                epoch_step,
                global_step,
                "default",
            )
            with open(os.path.join(path, "config.json"), "w") as f:
                f.write("{}")
            self.saved.append(path)


class _Recording(RecordsPromptOrder, _Trainer):
    def __init__(self, root, prompts):
        memagent = type("M", (), {"prompts": prompts, "answer_protocol": "boxed"})
        self.config = type("C", (), {"saver": _Saver(root), "memagent": memagent})


def test_the_trainer_records_the_order_in_each_model_it_saves(tmp_path):
    trainer = _Recording(tmp_path, "prompts/section_first.yaml")
    trainer.saved = []
    for step in range(3):
        trainer._save_hf(0, step, step)
    assert len(trainer.saved) == 2
    root = os.path.dirname(trainer.saved[0])
    assert len(os.listdir(root)) == 2  # no folder made at a step not saved
    for path in trainer.saved:
        record = read_prompt_order(path)
        assert record == {
            "order": "section_first",
            "prompts": "prompts/section_first.yaml",
        }


@pytest.fixture
def section_first_checkpoint(tiny_model_dir, tmp_path):
    """The tiny model as a checkpoint trained section-first (its record)."""
    import shutil

    model = tmp_path / "ckpt"
    shutil.copytree(tiny_model_dir, model)
    write_prompt_order(model, "section_first", "prompts/section_first.yaml")
    return model


@pytest.mark.parametrize("entry", ["ask", "eval"])
def test_the_entries_refuse_a_checkpoint_of_the_other_order(
    entry, section_first_checkpoint, tmp_path, monkeypatch
):
    """``python -m standin.ask`` / ``standin.eval`` (examples/ask.py's and
    examples/eval.py's main, the CPU inference) on a section-first checkpoint
    with config_eval_needle.yaml's memory-first prompts: exit 2 with the refusal,
    before any server starts."""
    from areal.utils import logging

    from examples import ask as ask_entry
    from examples import eval as eval_entry
    from standin import ask, eval

    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    monkeypatch.chdir(root)
    product, run = (ask_entry, ask.main) if entry == "ask" else (eval_entry, eval.main)
    logged: list[str] = []
    logger = logging.getLogger(f"prompt-order-{entry}")
    monkeypatch.setattr(logger, "error", logged.append)
    monkeypatch.setattr(product, "logger", logger)
    # gconfig.max_tokens: the tiny vocabulary spells the needle prompts longer
    argv = ["--config", "config_eval_needle.yaml", f"actor.path={section_first_checkpoint}",
            f"cluster.fileroot={tmp_path}/areal", f"eval.output_dir={tmp_path}/out",
            f"cluster.name_resolve.nfs_record_root={tmp_path}/nr", f"eval.data_root={tmp_path}/data",
            "gconfig.max_tokens=512"]  # fmt: skip
    if entry == "ask":
        argv += ["--document", "docs/needle_64.txt", "--question", "what is the code of eve ?"]  # fmt: skip
    else:
        argv += ["eval.lengths=[1]"]
    with pytest.raises(SystemExit) as stop:
        run(argv)
    assert stop.value.code == 2
    found = [m for m in logged if "prompt order" in m]
    assert len(found) == 1, logged
    msg = found[0]
    assert f"{section_first_checkpoint} was trained with the section_first" in msg
    assert "memory_first prompts" in msg
    assert "memagent.prompts=prompts/section_first.yaml" in msg
    assert f"but {'ask' if entry == 'ask' else 'the eval'} was given" in msg

"""Preflight, data and prompts: the files exist and every row passes the
schema (bad rows named by file, line and field); the prompts fit a turn."""

from __future__ import annotations

import copy
import json

import pytest

from memagent_workflow.preflight import Verdict
from memagent_workflow.preflight.data import (
    check_eval_files,
    check_prompts,
    check_train_file,
    turn_budgets_of,
)
from tests.unit.preflight_fakes import load, run_of


def row(i: int, **change) -> dict:
    r = {"id": f"q{i}", "question": "Who?", "context": "x" * 40, "answers": ["A"]}
    r.update(change)
    return r


def jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def cfg():
    return load("config.yaml", "scheduler.type=local")


def with_data(cfg, train, valid=None, batch=4):
    cfg = copy.deepcopy(cfg)
    cfg.train_dataset.path = str(train)
    cfg.train_dataset.batch_size = batch
    cfg.valid_dataset.path = str(valid or train)
    cfg.valid_dataset.batch_size = batch
    return cfg


def test_good_rows_pass_and_are_counted(cfg, tmp_path):
    path = jsonl(tmp_path / "train.jsonl", [row(i) for i in range(8)])
    run = run_of(with_data(cfg, path))
    check = check_train_file(run, "train")
    assert check.verdict is Verdict.OK and "8 valid rows" in check.found
    assert run.train_rows == 8 and run.longest_context_chars == 40


def test_bad_rows_fail_naming_line_and_field(cfg, tmp_path):
    rows = [row(0), row(1, answers=[]), row(2), row(3, question="")]
    path = jsonl(tmp_path / "train.jsonl", rows)
    check = check_train_file(run_of(with_data(cfg, path)), "train")
    assert check.verdict is Verdict.FAIL
    assert "2 bad row(s)" in check.found
    assert "line 2" in check.found and "'answers'" in check.found
    assert "line 4" in check.found and "'question'" in check.found


def test_rows_in_another_shape_must_be_converted(cfg, tmp_path):
    ruler = {"index": 0, "input": "Who?", "context": "x", "answers": ["A"]}
    path = jsonl(tmp_path / "train.jsonl", [ruler])
    check = check_train_file(run_of(with_data(cfg, path, batch=1)), "train")
    assert check.verdict is Verdict.FAIL and "prepare_data.py" in check.found


def test_a_missing_file_or_less_than_a_batch_fails(cfg, tmp_path):
    run = run_of(with_data(cfg, tmp_path / "nope.jsonl"))
    assert check_train_file(run, "train").verdict is Verdict.FAIL
    path = jsonl(tmp_path / "train.jsonl", [row(i) for i in range(3)])
    check = check_train_file(run_of(with_data(cfg, path, batch=4)), "train")
    assert check.verdict is Verdict.FAIL and "not one batch" in check.fix


def test_max_rows_reads_only_the_first_rows(cfg, tmp_path):
    rows = [row(i) for i in range(6)] + [row(6, context="")]
    path = jsonl(tmp_path / "train.jsonl", rows)
    run = run_of(with_data(cfg, path), max_rows=6)
    assert check_train_file(run, "train").verdict is Verdict.OK
    assert run.train_rows is None  # a partial count is not the data's size


def test_cpu_run_data_written_at_start_is_not_required(tmp_path):
    cpu = load(
        "config_cpu.yaml",
        f"train_dataset.path={tmp_path}/t.jsonl",
        f"valid_dataset.path={tmp_path}/v.jsonl",
    )
    assert check_train_file(run_of(cpu), "train").verdict is Verdict.NA


def test_eval_files_missing_fail_present_pass(tmp_path):
    ev = load("config_eval.yaml", f"eval.data_root={tmp_path}", "eval.lengths=[50]")
    run = run_of(ev, kind="eval")
    check = check_eval_files(run)
    assert check.verdict is Verdict.FAIL and "N=[50]" in check.found
    jsonl(tmp_path / "eval_50.json", [row(i) for i in range(3)])
    assert check_eval_files(run_of(ev, kind="eval")).verdict is Verdict.OK


def test_a_bad_prompts_file_fails(cfg, tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("memory_update: '{question} {chunk}'\nfinal_answer: '{question}'\n")
    broken = copy.deepcopy(cfg)
    broken.memagent.prompts = str(bad)
    check = check_prompts(run_of(broken))
    assert check.verdict is Verdict.FAIL and "missing slot" in check.found


def test_prompts_fit_is_checked_with_a_local_tokenizer(cfg, tiny_model_dir):
    """The fullest turn fits exactly when the workflow's rule says so: its
    tokens + 1 is the smallest window that passes."""
    local = copy.deepcopy(cfg)
    local.tokenizer_path = str(tiny_model_dir)
    budgets, note = turn_budgets_of(run_of(local))
    fullest = budgets[0]  # the memory turn: chunk 5000 + memory 1024 in, 1024 out
    assert note == "" and fullest.template > 20
    assert (fullest.memory, fullest.chunk, fullest.new) == (1024, 5000, 1024)
    local.gconfig.max_tokens = fullest.total + 1
    check = check_prompts(run_of(local))
    assert check.verdict is Verdict.OK, check
    assert f"fullest {fullest.describe()}" in check.found
    assert check.needed.endswith(f"< gconfig.max_tokens={fullest.total + 1}")
    local.gconfig.max_tokens = fullest.total
    check = check_prompts(run_of(local))
    assert check.verdict is Verdict.FAIL, check
    assert f"reaches gconfig.max_tokens={fullest.total}" in check.found


def test_prompts_without_a_local_tokenizer_warn(cfg):
    remote = copy.deepcopy(cfg)
    remote.tokenizer_path = "nobody/not-cached"
    check = check_prompts(run_of(remote))
    assert check.verdict is Verdict.WARN and "slots ok" in check.found

"""One length rule everywhere: SGLang's, prompt + max_new_tokens < context length.

SGLang 0.5.10 answers 400 when ``len(input_ids) + max_new_tokens >=
context_length``; the configs set ``sglang.context_length`` to
``gconfig.max_tokens``; the workflow refuses exactly the turns SGLang would
reject (AReaL's client would retry them three times and lose the episode).
One function holds the rule (``context.turn_fits``): the turn check, the
templates check and the preflight's counts all go through it.
The stand-in's side: tests/integration/test_standin_protocol.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from examples.eval import load_config as load_eval_config
from examples.train import load_config as load_train_config
from memagent_workflow.context import (
    TurnTooLong,
    check_fit,
    check_turn,
    template_tokens,
    turn_budgets,
    turn_fits,
)
from memagent_workflow.prompts import builtin_prompts
from memagent_workflow.workflow import Episode
from standin.eval import load_config as load_cpu_eval_config
from standin.train import load_config as load_cpu_config
from tests.builders import make_workflow
from tests.fakes import FakeEngine

ROOT = Path(__file__).resolve().parents[2]


def turn(tokenizer, prompt_len: int, max_new: int, max_tokens: int):
    """One model call of ``prompt_len`` + ``max_new`` tokens in a window of
    ``max_tokens`` (the workflow itself is built for a large window)."""
    wf = make_workflow(tokenizer, group_size=1, chunk_tokens=64)
    gconfig = wf.gconfig.new(max_new_tokens=max_new, max_tokens=max_tokens)
    engine = FakeEngine(tokenizer, lambda ep: "\\boxed{x}")
    prompt = np.full(prompt_len, 5, dtype=np.int32)
    return asyncio.run(wf.generate(engine, "rid", prompt, gconfig, Episode()))


def test_a_turn_that_exactly_fills_the_window_is_refused(tokenizer):
    with pytest.raises(ValueError, match="80 tokens plus 20 new tokens reaches gco"):
        turn(tokenizer, prompt_len=80, max_new=20, max_tokens=100)


def test_a_turn_one_token_short_of_the_window_is_sent(tokenizer):
    assert len(turn(tokenizer, prompt_len=79, max_new=20, max_tokens=100).output_ids)


def test_the_rule_is_strict_and_its_refusal_names_the_knobs():
    assert turn_fits(79, 20, 100) and not turn_fits(80, 20, 100)
    check_turn(79, 20, 100)
    with pytest.raises(TurnTooLong) as err:
        check_turn(80, 20, 100)
    message = str(err.value)
    assert "80 tokens plus 20 new tokens reaches gconfig.max_tokens=100" in message
    assert "sglang.context_length" in message and "memagent.chunk_tokens" in message


def test_the_templates_check_and_the_turn_check_share_the_boundary(tokenizer):
    """The window in which the fullest memory turn is just sent is the smallest
    the templates check accepts; one token less and both refuse."""
    texts = builtin_prompts()
    knobs = dict(chunk_tokens=64, max_memory_tokens=16, max_final_tokens=8)
    fullest = turn_budgets(template_tokens(tokenizer, texts), **knobs)[0]
    assert fullest.template == texts.memory_template(tokenizer, "").overhead > 20
    window = fullest.total + 1
    check_fit(tokenizer, texts, max_tokens=window, **knobs)
    assert len(turn(tokenizer, fullest.prompt, 16, window).output_ids)
    with pytest.raises(TurnTooLong, match="template 'memory_update', built-in"):
        check_fit(tokenizer, texts, max_tokens=window - 1, **knobs)
    with pytest.raises(TurnTooLong):
        turn(tokenizer, fullest.prompt, 16, window - 1)


def test_a_tokenizer_without_a_pad_token(tokenizer):
    """AReaL then adds None to the stop ids; the workflow must not choke on it."""
    no_pad = tokenizer.__class__.from_pretrained(tokenizer.name_or_path)
    no_pad.pad_token = None
    wf = make_workflow(no_pad, group_size=1, chunk_tokens=64)
    assert None in wf.gconfig.stop_token_ids
    assert wf.stop_ids == {no_pad.eos_token_id}


@pytest.mark.parametrize(
    "name, load",
    [
        ("config.yaml", load_train_config),
        ("config_cpu.yaml", load_cpu_config),
        ("config_eval.yaml", load_eval_config),
        ("config_eval_cpu.yaml", load_cpu_eval_config),
    ],
)
def test_every_config_gives_the_server_the_workflows_window(name, load, tmp_path):
    cfg = load(["--config", str(ROOT / name), f"cluster.fileroot={tmp_path}"])
    assert cfg.sglang.context_length == cfg.gconfig.max_tokens
    if hasattr(cfg, "eval_gconfig") and cfg.eval_gconfig is not None:
        assert cfg.eval_gconfig.max_tokens <= cfg.sglang.context_length

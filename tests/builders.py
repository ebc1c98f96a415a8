"""The workflow the tests build: small knobs, one place; a test names what differs."""

from __future__ import annotations

from areal.api.cli_args import GenerationHyperparameters

from memagent_workflow.workflow import MemAgentWorkflow
from tests.fakes import FakeEngine

MAX_TOKENS = 4096
CHUNK_TOKENS = 40
MEMORY_TOKENS = 16
GROUP_SIZE = 4
DEFAULTS = dict(
    chunk_tokens=CHUNK_TOKENS,
    max_memory_tokens=MEMORY_TOKENS,
    max_final_tokens=FakeEngine.final_budget,  # FakeEngine's answer_for turn
    group_size=GROUP_SIZE,
    engine_retry_s=0,  # a failed call fails its episode at once
)


def make_workflow(
    tokenizer, *, cls=MemAgentWorkflow, max_tokens: int = MAX_TOKENS, **overrides
):
    """A ``cls`` (MemAgentWorkflow or a subclass) with ``DEFAULTS`` but for
    ``overrides``, in a ``max_tokens`` window."""
    gconfig = GenerationHyperparameters(max_tokens=max_tokens)
    return cls(gconfig=gconfig, tokenizer=tokenizer, **{**DEFAULTS, **overrides})

"""The workflow the tests build: small knobs, one place; a test names what differs."""

from __future__ import annotations

from areal.api.cli_args import GenerationHyperparameters

from memagent_workflow.prompts import final_answer_template, memory_update_template
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


def expected_prompts(
    tokenizer,
    script,
    episode: int,
    chunks,
    question: str,
    initial: str,
    keep_empty: bool = False,
) -> list[list[int]]:
    """Every prompt of one episode, built from the template pieces by hand:
    each memory is what ``script`` (a ``MemoryScript``) kept the turn before;
    an empty one becomes ``initial`` again unless ``keep_empty``."""
    mem = memory_update_template(tokenizer, question)
    fin = final_answer_template(tokenizer, question)
    first = tokenizer.encode(initial, add_special_tokens=False)
    pieces = lambda a: [int(t) for t in a]  # noqa: E731
    memory, prompts = first, []
    for k, chunk in enumerate(chunks):
        prompts.append(
            pieces(mem.before_memory)
            + memory
            + pieces(mem.after_memory)
            + list(chunk)
            + pieces(mem.after_chunk)
        )
        written = script.kept(episode, k)
        memory = written if (written or keep_empty) else first
    prompts.append(pieces(fin.before_memory) + memory + pieces(fin.after_memory))
    return prompts

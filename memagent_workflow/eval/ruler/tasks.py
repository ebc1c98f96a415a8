"""RULER's synthetic tasks as the MemAgent paper evaluates them (task definitions).

Each task is a family (niah, variable tracking, frequent words, QA) with the
parameters RULER's ``scripts/synthetic.yaml`` gives it, the number of answer
tokens RULER reserves (``tokens_to_generate``, counted in a sample's length),
the haystack it reads and the metric RULER's ``eval/synthetic/constants.py``
scores it with. The task wording below (needle sentence, noise sentence,
questions) is the benchmark's own definition, kept so that lengths and
questions match RULER; the question is RULER's prompt template without the
context, as MemAgent's RULER preparation splits it (the context goes to the
memory turns, the question to every prompt).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Haystack kinds: built in (offline) or read from a file / hub dataset.
NOISE, NEEDLES, ESSAY, SQUAD, HOTPOTQA = (
    "noise",
    "needles",
    "essay",
    "squad",
    "hotpotqa",
)
BUILT_IN = (NOISE, NEEDLES, None)

# RULER's metrics: recall over every gold value, or any gold value found.
ALL = "string_match_all"
PART = "string_match_part"


@dataclass(frozen=True)
class Task:
    """One RULER task: its family, parameters, haystack, budget and metric."""

    name: str
    family: str  # niah | vt | fwe | qa
    haystack: str | None
    tokens_to_generate: int
    metric: str
    params: dict[str, Any] = field(default_factory=dict)


def _niah(name: str, haystack: str, k: str, v: str, nk=1, nv=1, nq=1) -> Task:
    params = {"key_type": k, "value_type": v, "keys": max(nk, nq), "values": nv}
    params["queries"] = nq
    return Task(name, "niah", haystack, 128, ALL, params)


TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        _niah("niah_single_1", NOISE, "words", "numbers"),
        _niah("niah_single_2", ESSAY, "words", "numbers"),
        _niah("niah_single_3", ESSAY, "words", "uuids"),
        _niah("niah_multikey_1", ESSAY, "words", "numbers", nk=4),
        _niah("niah_multikey_2", NEEDLES, "words", "numbers"),
        _niah("niah_multikey_3", NEEDLES, "uuids", "uuids"),
        _niah("niah_multivalue", ESSAY, "words", "numbers", nv=4),
        _niah("niah_multiquery", ESSAY, "words", "numbers", nq=4),
        Task("vt", "vt", NOISE, 30, ALL, {"chains": 1, "hops": 4}),
        Task("fwe", "fwe", None, 50, ALL, {"alpha": 2.0, "word_len": 6}),
        Task("qa_1", "qa", SQUAD, 32, PART),
        Task("qa_2", "qa", HOTPOTQA, 32, PART),
    )
}
# The tasks of the MemAgent paper's out-of-distribution table, in its order,
# and its lengths (tokens).
PAPER_TASKS = (
    "niah_single_1",
    "niah_single_2",
    "niah_single_3",
    "niah_multikey_1",
    "niah_multikey_2",
    "niah_multikey_3",
    "niah_multivalue",
    "niah_multiquery",
    "vt",
    "fwe",
    "qa_1",
)
PAPER_LENGTHS = (8192, 16384, 32768, 65536, 131072, 262144, 524288)

# ---------------------------------------------------------------- wording

NEEDLE = "One of the special magic {kind} for {key} is: {value}."
NOISE_SENTENCE = (
    "The grass is green. The sky is blue. The sun is yellow. "
    "Here we go. There and back again."
)
NIAH_PLURAL = (
    "Some special magic {kind} are hidden within the following text. Make sure "
    "to memorize it. I will quiz you about the {kind} afterwards.\n"
    "What are all the special magic {kind} for {query} mentioned in the "
    "provided text?"
)
NIAH_SINGULAR = (
    "A special magic {kind} is hidden within the following text. Make sure to "
    "memorize it. I will quiz you about the {kind} afterwards.\n"
    "What is the special magic {kind} for {query} mentioned in the provided text?"
)
VT_QUESTION = (
    "Memorize and track the chain(s) of variable assignment hidden in the "
    "following text.\nQuestion: Find all variables that are assigned the value "
    "{query} in the text above."
)
FWE_QUESTION = (
    "Read the following coded text and track the frequency of each coded word. "
    "Find the three most frequently appeared coded words.\nQuestion: Do not "
    "provide any explanation. Please ignore the dots '....'. What are the three "
    "most frequently appeared words in the above coded text?"
)
QA_QUESTION = (
    "Answer the question based on the given documents. Only give me the answer "
    "and do not output any other words.\n\nQuestion: {query}"
)
DOCUMENT = "Document {i}:\n{text}"


def expand_names(names: list[str] | tuple[str, ...]) -> list[str]:
    """Task names with ``ruler`` standing for the paper's eleven; unknown ones refused."""
    out: list[str] = []
    for name in names:
        for n in PAPER_TASKS if name == "ruler" else (name,):
            if n not in TASKS:
                raise ValueError(
                    f"unknown RULER task {n!r}; known: {', '.join(TASKS)} "
                    "(or 'ruler' for the paper's eleven)"
                )
            if n not in out:
                out.append(n)
    return out

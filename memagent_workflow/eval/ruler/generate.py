"""Write RULER task files ``eval_{task}_{length}.json`` in the project's eval schema.

Each sample is ``{id, question, context, answers}`` (what every eval reader
takes) plus ``task``, ``metric`` (RULER's score for the task), ``length``
(tokens as RULER counts them: question + context + the answer tokens RULER
reserves), ``target_length``, ``tokens_to_generate``, ``set: "RULER"`` and,
where the task has it, ``evidence`` (the asked needles, the asked variable
chain, the gold documents or supporting sentences: what eval traces locate).
Samples are drawn from per-sample generators seeded by (seed, task, length,
index): the same seed gives the same bytes. A file is written one sample per
line to a temporary file and renamed when complete.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tqdm import tqdm

from memagent_workflow.data.files import atomic_write
from memagent_workflow.eval.ruler import fwe, niah, qa, vt
from memagent_workflow.eval.ruler import tasks as T
from memagent_workflow.eval.ruler.fit import FitError, TokenCounter, fit
from memagent_workflow.eval.ruler.haystack import Haystack, pick
from memagent_workflow.eval.ruler.layout import Drawn, Haystacks
from memagent_workflow.eval.ruler.tasks import BUILT_IN, TASKS, expand_names

SET = "RULER"


def ruler_file(root: str | Path, task: str, length: int) -> Path:
    """``{root}/eval_{task}_{length}.json`` (the original's naming)."""
    return Path(root) / f"eval_{task}_{length}.json"


class Generator:
    """Samples of RULER tasks for one tokenizer, seed and set of haystacks."""

    def __init__(
        self,
        tokenizer: Any,
        seed: int,
        haystacks: list[Haystack] = (),
        repeat_haystack: bool = False,
    ):
        self.counter = TokenCounter(tokenizer)
        self.seed = seed
        self.haystacks = list(haystacks)
        self.shared = Haystacks(self.counter, repeat_haystack)

    def haystack_for(self, task: str) -> Haystack | None:
        kind = TASKS[task].haystack
        return None if kind in BUILT_IN else pick(self.haystacks, kind, task)

    def sample(self, task: str, length: int, index: int) -> dict[str, Any]:
        """Sample ``index`` of ``task`` at ``length`` tokens."""
        t = TASKS[task]
        rng = random.Random(f"ruler/{self.seed}/{task}/{length}/{index}")
        drawn = draw_sample(
            t, rng, self.haystack_for(task), self.shared, length=length, index=index
        )
        q_tokens = self.counter.one(drawn.question)
        room = length - t.tokens_to_generate - q_tokens
        what = f"{task} at length {length}"
        if room <= 0:
            raise FitError(
                f"{what}: the question ({q_tokens} tokens) and the {t.tokens_to_generate} "
                "answer tokens RULER reserves leave no room for a context"
            )
        context, c_tokens = fit(drawn.plan, room, self.counter, what)
        return {
            "id": f"{task}_{length}_{index}",
            "question": drawn.question,
            "context": context,
            "answers": drawn.answers,
            "task": task,
            "metric": t.metric,
            "length": q_tokens + c_tokens + t.tokens_to_generate,
            "target_length": length,
            "tokens_to_generate": t.tokens_to_generate,
            "set": SET,
            **drawn.extra,
        }

    def samples(self, task: str, length: int, n: int) -> Iterator[dict[str, Any]]:
        for i in range(n):
            yield self.sample(task, length, i)


def draw_sample(
    task: T.Task,
    rng: random.Random,
    hay: Haystack | None,
    shared: Haystacks,
    *,
    length: int,
    index: int,
) -> Drawn:
    """One sample's random draws for ``task``."""
    if task.family == "niah":
        return niah.niah_sample(task, rng, hay, shared)
    if task.family == "vt":
        return vt.vt_sample(task, rng, hay, shared)
    if task.family == "fwe":
        return fwe.fwe_sample(task, rng, hay, shared, length=length)
    if task.family == "qa":
        return qa.qa_sample(task, rng, hay, shared, index=index)
    raise ValueError(f"unknown task family {task.family!r}")


def check_inputs(gen: Generator, tasks: list[str], lengths: list[int]) -> None:
    """Every task has its haystack and fits every length (sample 0 tried)."""
    for task in tasks:
        gen.haystack_for(task)
    for task in tasks:
        for length in lengths:
            gen.sample(task, length, 0)


def write_file(path: Path, rows: Iterator[dict[str, Any]]) -> int:
    """A JSON list, one sample per line, written atomically."""
    count = 0

    def write(tmp: Path) -> None:
        nonlocal count
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write("[\n")
            for row in rows:
                f.write(
                    ("" if count == 0 else ",\n") + json.dumps(row, ensure_ascii=False)
                )
                count += 1
            f.write("\n]\n")

    atomic_write(path, write)
    return count


def generate(
    tokenizer: Any,
    tasks: list[str],
    lengths: list[int],
    output: str | Path,
    seed: int,
    samples: int,
    haystacks: list[Haystack] = (),
    repeat_haystack: bool = False,
) -> list[Path]:
    """Write ``eval_{task}_{length}.json`` for every task and length; returns paths.

    Every input is checked (task names, haystacks, each length fitted once)
    before the first file is written.
    """
    tasks = expand_names(tasks)
    if samples < 1:
        raise ValueError(f"--samples must be >= 1, got {samples}")
    gen = Generator(tokenizer, seed, haystacks, repeat_haystack)
    check_inputs(gen, tasks, lengths)
    written = []
    for task in tasks:
        for length in lengths:
            path = ruler_file(output, task, length)
            rows = tqdm(
                gen.samples(task, length, samples),
                total=samples,
                desc=path.name,
                unit="sample",
                file=sys.stderr,
                dynamic_ncols=True,
            )
            write_file(path, rows)
            written.append(path)
    return written

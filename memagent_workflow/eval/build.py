"""Building RULER-HQA-style eval sets for lengths the hub does not hold.

A built set follows the official construction as far as it is known: the
official sets' questions (the dev-file positions in their ``index`` field), the
same paragraph pool and ``Document k:`` layout (``expand.py``); each question
keeps its own paragraphs (gold included) and gains distinct random paragraphs
from the pool up to N documents, shuffled with a seed derived from (seed,
question index, N). The official sets' own random draws are not reproducible,
so a built set is "RULER-HQA-style", not official: every sample says so in its
``set`` field, and eval summaries repeat it. Where the source names its
supporting facts, a sample carries their sentences as ``evidence`` (what eval
traces locate). Same seed and source give byte-identical files.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Iterable
from pathlib import Path

from memagent_workflow.data.files import (
    DataError,
    Unreadable,
    read_records,
    write_json_list,
)
from memagent_workflow.data.schema import show
from memagent_workflow.eval.expand import (
    expand_context,
    load_hotpotqa_source,
    paragraph_pool,
)
from memagent_workflow.eval.sets import BUILT_SET, EvalDataError, eval_file


def official_indices(path: str | os.PathLike) -> list[int]:
    """The question indices (dev-file positions) of an official eval file, in order."""
    out: dict[int, str] = {}  # index -> where
    try:
        for label, raw in read_records(path):
            if isinstance(raw, Unreadable):
                raise EvalDataError(f"{path}: {label}: field '(row)': {raw.problem}")
            index = raw.get("index") if isinstance(raw, dict) else None
            if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                raise EvalDataError(
                    f"{path}: {label}: field 'index' must be the question's position "
                    f"in the HotpotQA dev file (an int >= 0), got {show(index)}; "
                    "--indices-from must name an official eval_N.json"
                )
            if index in out:
                raise EvalDataError(
                    f"{path}: {label}: field 'index': duplicate {index} (first at "
                    f"{out[index]}); the questions of an official file are distinct"
                )
            out[index] = label
    except DataError as exc:
        raise EvalDataError(str(exc)) from None
    if not out:
        raise EvalDataError(f"{path}: no question indices (an empty file)")
    return list(out)


def _sample(
    rec: dict, index: int, n: int, seed: int, own: list[int], pool: list[str]
) -> dict:
    """One sample: the question's own paragraphs padded from the pool to ``n``."""
    rng = random.Random(f"{seed}:{index}:{n}")
    own_set = set(own)
    others = [j for j in range(len(pool)) if j not in own_set]
    docs = own + rng.sample(others, n - len(own))
    rng.shuffle(docs)
    sample = {
        "input": rec["question"],
        "context": expand_context(docs, pool),
        "answers": [rec["answer"]],
        "num_docs": n,
        "index": index,
        "set": BUILT_SET,
    }
    if rec["supporting"]:  # HotpotQA's supporting sentences: traces locate them
        sample["evidence"] = rec["supporting"]
    return sample


def build(
    lengths: Iterable[int],
    source_path: str | os.PathLike,
    seed: int,
    out_root: str | os.PathLike,
    question_indices: list[int],
    progress: bool = True,
) -> list[Path]:
    """Build ``eval_{N}.json`` for each N from a HotpotQA dev file, deterministically.

    ``question_indices``: dev-file positions of the questions, in order (from an
    official file, see ``official_indices``). Samples are streamed to disk one
    per line, so memory stays at about one sample.
    """
    from tqdm import tqdm

    records = load_hotpotqa_source(source_path)
    bad = [i for i in question_indices if not 0 <= i < len(records)]
    if bad or not question_indices:
        raise EvalDataError(
            f"{source_path}: has {len(records)} questions; question indices "
            f"{bad[:8] or '(none given)'} are not in it (is it the dev file the "
            "official sets were made from?)"
        )
    pool = paragraph_pool(records)
    position = {p: j for j, p in enumerate(pool)}
    own = {
        i: list(
            dict.fromkeys(position[f"{t}\n{x}"] for t, x in records[i]["paragraphs"])
        )
        for i in question_indices
    }
    most_own = max(len(o) for o in own.values())
    lengths = list(lengths)
    for n in lengths:
        if n > len(pool):
            raise EvalDataError(
                f"cannot build eval_{n}.json: {source_path} has only {len(pool)} "
                f"unique paragraphs, so the maximum N is {len(pool)}"
            )
        if n < most_own:
            raise EvalDataError(
                f"cannot build eval_{n}.json: N must be at least {most_own}, the "
                "largest number of paragraphs a question brings itself"
            )
    written = []
    for n in lengths:
        bar = tqdm(
            question_indices, desc=f"eval_{n}", file=sys.stderr, disable=not progress
        )
        rows = (_sample(records[i], i, n, seed, own[i], pool) for i in bar)
        dest = eval_file(out_root, n)
        write_json_list(dest, rows)
        written.append(dest)
    return written

"""Building RULER-HQA-style eval sets from HotpotQA's dev file (up to 3.5M tokens).

Each question keeps its own paragraphs (gold included) and gains distinct random
paragraphs from the dev pool up to N documents, shuffled with a seed derived from
(seed, question, N); same seed and source give byte-identical files.
"""

from __future__ import annotations

import json
import os
import random
import sys
from collections.abc import Iterable
from pathlib import Path

from memagent_workflow.data.files import DataError, atomic_write, read_records
from memagent_workflow.data.schema import BadField, parse_id, show
from memagent_workflow.eval.sets import EvalDataError, eval_file


def load_hotpotqa_source(path: str | os.PathLike) -> list[dict]:
    """Validated HotpotQA distractor records: ``{_id, question, answer, paragraphs}``.

    ``paragraphs`` is a list of ``(title, text)``; text joins the sentences with ""
    (HotpotQA sentences carry their own leading spaces).
    """
    path = Path(path)
    out = []
    try:
        records = list(read_records(path))
    except DataError as exc:
        raise EvalDataError(str(exc)) from None
    for label, rec in records:
        where = f"{path}: {label}"
        if not isinstance(rec, dict):
            raise EvalDataError(f"{where}: expected a JSON object, got {show(rec)}")
        try:
            rid = parse_id(rec)
        except BadField as bad:
            raise EvalDataError(f"{where}: {bad}") from None
        where += f" (_id {rid!r})"
        for field in ("question", "answer"):
            value = rec.get(field)
            if not isinstance(value, str) or not value.strip():
                raise EvalDataError(
                    f"{where}: field '{field}' must be a non-empty string"
                )
        ctx = rec.get("context")
        if not isinstance(ctx, list) or not ctx:
            raise EvalDataError(f"{where}: field 'context' must be a non-empty list")
        paragraphs = []
        for j, para in enumerate(ctx):
            ok = (
                isinstance(para, list | tuple)
                and len(para) == 2
                and isinstance(para[0], str)
                and isinstance(para[1], list)
                and all(isinstance(s, str) for s in para[1])
            )
            if not ok:
                raise EvalDataError(
                    f"{where}: field 'context[{j}]' must be [title, [sentences...]]"
                )
            paragraphs.append((para[0], "".join(para[1])))
        q, a = rec["question"], rec["answer"]
        out.append({"_id": rid, "question": q, "answer": a, "paragraphs": paragraphs})
    return out


def _sample(rec: dict, qi: int, n: int, seed: int, own: list[int], pool: list) -> dict:
    """One eval sample: the question's own paragraphs padded from the pool to ``n``."""
    rng = random.Random(f"{seed}:{qi}:{n}")
    own_set = set(own)
    others = [j for j in range(len(pool)) if j not in own_set]
    docs = own + rng.sample(others, n - len(own))
    rng.shuffle(docs)
    context = "\n\n".join(
        f"Document {k}:\n{pool[j][0]}\n{pool[j][1]}" for k, j in enumerate(docs, 1)
    )
    return {
        "id": rec["_id"],
        "question": rec["question"],
        "context": context,
        "answers": [rec["answer"]],
        "num_docs": n,
    }


def build(
    lengths: Iterable[int],
    source_path: str | os.PathLike,
    seed: int,
    out_root: str | os.PathLike,
    num_questions: int = 128,
    progress: bool = True,
) -> list[Path]:
    """Build ``eval_{N}.json`` for each N from a HotpotQA dev file, deterministically.

    Uses the first ``num_questions`` records in file order. Each context holds
    the question's own paragraphs plus distinct random paragraphs from the pool
    of all unique (title, text) paragraphs in the source, N in all, shuffled
    with ``random.Random(f"{seed}:{question index}:{N}")``. Samples are
    streamed to disk one per line, so memory stays at about one sample.
    """
    from tqdm import tqdm

    records = load_hotpotqa_source(source_path)
    if not 1 <= num_questions <= len(records):
        raise EvalDataError(
            f"{source_path}: num_questions must be in 1..{len(records)} "
            f"(the source has {len(records)} questions), got {num_questions}"
        )
    pool_index: dict[tuple[str, str], int] = {}
    for rec in records:
        for para in rec["paragraphs"]:
            pool_index.setdefault(para, len(pool_index))
    pool = list(pool_index)
    chosen = records[:num_questions]
    if len({r["_id"] for r in chosen}) != len(chosen):
        raise EvalDataError(f"{source_path}: duplicate '_id' among the questions used")
    own = [list(dict.fromkeys(pool_index[p] for p in r["paragraphs"])) for r in chosen]
    most_own = max(len(o) for o in own)
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
    out_root = Path(out_root)
    out_root.mkdir(parents=True, exist_ok=True)

    def write(tmp: Path, n: int) -> None:
        with tmp.open("w", encoding="utf-8", newline="\n") as f:
            f.write("[\n")
            bar = tqdm(chosen, desc=f"eval_{n}", file=sys.stderr, disable=not progress)
            for qi, rec in enumerate(bar):
                sample = _sample(rec, qi, n, seed, own[qi], pool)
                f.write(
                    ("" if qi == 0 else ",\n") + json.dumps(sample, ensure_ascii=False)
                )
            f.write("\n]\n")

    written = []
    for n in lengths:
        dest = eval_file(out_root, n)
        atomic_write(dest, lambda tmp, n=n: write(tmp, n))
        written.append(dest)
    return written

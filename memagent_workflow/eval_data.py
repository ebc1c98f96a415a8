"""RULER-HQA evaluation sets: load, check, download and build ``eval_{N}.json``.

Each file is a JSON list of samples. Hub files use the original field names
(``input``, ``context``, ``answers``, ``num_docs``, ``index``); ours use
``{id, question, context, answers, num_docs}``. N is the number of documents
(HotpotQA paragraphs) in each sample's context. No AReaL import here.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

DEFAULT_LENGTHS = (50, 100, 200, 400, 800, 1600, 3200, 6400)
HUB_REPO_ID = "BytedTsinghua-SIA/hotpotqa"
_DOC_HEADER = re.compile(r"^Document \d+:$", re.MULTILINE)


class EvalDataError(ValueError):
    """A missing, malformed or unobtainable evaluation or source file."""


def eval_file(data_root: str | os.PathLike, n: int) -> Path:
    """Path of the RULER-HQA file with ``n`` documents per sample."""
    return Path(data_root) / f"eval_{n}.json"


# ---------------------------------------------------------------- loading


def _nonempty_str(x: Any) -> bool:
    return isinstance(x, str) and bool(x.strip())


def _is_id(x: Any) -> bool:
    return isinstance(x, str | int) and not isinstance(x, bool)


def _first(raw: dict, names: Sequence[str]) -> tuple[str | None, Any]:
    for name in names:
        if name in raw:
            return name, raw[name]
    return None, None


def _normalise(raw: Any, i: int, path: Path) -> dict:
    """One sample in our field names, or an ``EvalDataError`` saying what is wrong."""
    if not isinstance(raw, dict):
        raise EvalDataError(
            f"{path}: sample {i}: expected a JSON object, got {type(raw).__name__}"
        )
    id_field, sid = _first(raw, ("id", "_id", "index"))
    where = f"{path}: sample {i}"
    if id_field is None:
        sid = str(i)
    elif not _is_id(sid):
        raise EvalDataError(f"{where}: field '{id_field}' must be a string or int")
    else:
        sid = str(sid)
        where += f" (id {sid!r})"

    def bad(field: str, why: str) -> EvalDataError:
        return EvalDataError(f"{where}: field '{field}' {why}")

    q_field, question = _first(raw, ("question", "input"))
    if q_field is None:
        raise bad("question", "is missing (also looked for 'input')")
    if not _nonempty_str(question):
        raise bad(q_field, "must be a non-empty string")
    if "context" not in raw:
        raise bad("context", "is missing")
    context = raw["context"]
    if isinstance(context, list):
        raise bad(
            "context",
            "is a list of paragraph indices (the original index-only format for "
            "N > 10000); rebuild such files with `prepare_eval_data.py --build`",
        )
    if not isinstance(context, str):
        raise bad("context", f"must be a string, got {type(context).__name__}")
    if "answers" not in raw:
        raise bad("answers", "is missing")
    answers = raw["answers"]
    if isinstance(answers, str):
        answers = [answers]
    if (
        not isinstance(answers, list)
        or not answers
        or not all(map(_nonempty_str, answers))
    ):
        raise bad("answers", "must be a non-empty list of non-empty strings")
    num_docs = raw.get("num_docs")
    if num_docs is None:
        num_docs = len(_DOC_HEADER.findall(context))
    elif isinstance(num_docs, bool) or not isinstance(num_docs, int) or num_docs < 0:
        raise bad("num_docs", "must be a non-negative integer")
    return {
        "id": sid,
        "question": question,
        "context": context,
        "answers": list(answers),
        "num_docs": num_docs,
    }


def _raw_samples(path: Path) -> Iterator[Any]:
    """Raw samples; streams one-sample-per-line files, else falls back to json.load."""
    yielded = 0
    try:
        with path.open(encoding="utf-8", newline="") as f:
            if f.readline().strip() == "[":
                for line in f:
                    if (line := line.strip()) == "]":
                        if not f.read().strip():
                            return
                        break  # trailing data: let json.load report it
                    yield json.loads(line.removesuffix(","))
                    yielded += 1
    except (json.JSONDecodeError, UnicodeDecodeError):
        pass  # not the one-sample-per-line layout: parse the whole file below
    try:
        with path.open(encoding="utf-8") as f:
            data = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise EvalDataError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(data, list):
        raise EvalDataError(
            f"{path}: top level must be a JSON list of samples, got {type(data).__name__}"
        )
    yield from data[yielded:]


def iter_eval_file(path: str | os.PathLike) -> Iterator[dict]:
    """Validated, normalised samples one at a time (streams files written by ``build``)."""
    path = Path(path)
    seen: dict[str, int] = {}
    for i, raw in enumerate(_raw_samples(path)):
        sample = _normalise(raw, i, path)
        if sample["id"] in seen:
            raise EvalDataError(
                f"{path}: sample {i} (id {sample['id']!r}): field 'id' duplicates "
                f"sample {seen[sample['id']]}"
            )
        seen[sample["id"]] = i
        yield sample


def load_eval_file(path: str | os.PathLike) -> list[dict]:
    """All samples of an eval file as ``{id, question, context, answers, num_docs}``."""
    return list(iter_eval_file(path))


def count_eval_samples(path: str | os.PathLike) -> int:
    """Validate a file without keeping its samples; return how many it holds."""
    return sum(1 for _ in iter_eval_file(path))


# ------------------------------------------------------- status / download


def status(
    data_root: str | os.PathLike, lengths: Iterable[int] = DEFAULT_LENGTHS
) -> dict[int, Path | None]:
    """For each length, the file's path if present, else None (contents not checked)."""
    return {
        n: (p if (p := eval_file(data_root, n)).is_file() else None) for n in lengths
    }


def format_status(data_root: str | os.PathLike, found: dict[int, Path | None]) -> str:
    """A printable present/missing table for the result of ``status``."""
    lines = [f"RULER-HQA eval files under {data_root}:"]
    for n, p in found.items():
        if p is None:
            lines.append(f"  eval_{n}.json  missing")
        else:
            size = p.stat().st_size / 2**20
            lines.append(f"  eval_{n}.json  present  ({size:.1f} MiB)")
    missing = sum(p is None for p in found.values())
    lines.append(f"{len(found) - missing} present, {missing} missing")
    return "\n".join(lines)


def _hf_hub_download(repo_id: str, filename: str) -> Path:
    """Fetch one dataset file into the HF cache; the only network call (tests patch it)."""
    from huggingface_hub import hf_hub_download

    return Path(hf_hub_download(repo_id, filename, repo_type="dataset"))


def _atomic_write(dest: Path, write: Callable[[Path], None]) -> None:
    """Run ``write(tmp)`` on a temp file beside ``dest``, then rename it into place."""
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def download(
    data_root: str | os.PathLike,
    lengths: Iterable[int] = DEFAULT_LENGTHS,
    repo_id: str = HUB_REPO_ID,
    force: bool = False,
) -> list[Path]:
    """Fetch missing (or, with ``force``, all) files from the hub; validate each."""
    root = Path(data_root)
    root.mkdir(parents=True, exist_ok=True)
    written = []
    for n in lengths:
        dest = eval_file(root, n)
        if dest.is_file() and not force:
            continue
        try:
            cached = _hf_hub_download(repo_id, dest.name)
        except Exception as exc:  # network, auth, missing file: all the same here
            raise EvalDataError(
                f"could not download {dest.name} from dataset {repo_id}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        count_eval_samples(cached)
        _atomic_write(dest, lambda tmp, src=cached: shutil.copyfile(src, tmp))
        written.append(dest)
    return written


# ------------------------------------------------------------------ build


def _source_records(path: Path) -> list[Any]:
    """A JSON list, or JSONL, of raw records."""
    with path.open(encoding="utf-8") as f:
        is_list = f.read(64).lstrip().startswith("[")
        f.seek(0)
        try:
            if is_list:
                return json.load(f)
            return [json.loads(line) for line in f if line.strip()]
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            kind = "JSON list" if is_list else "JSONL (one record per line)"
            raise EvalDataError(f"{path}: not a valid HotpotQA {kind}: {exc}") from exc


def load_hotpotqa_source(path: str | os.PathLike) -> list[dict]:
    """Validated HotpotQA distractor records: ``{_id, question, answer, paragraphs}``.

    ``paragraphs`` is a list of ``(title, text)``; text joins the sentences with ""
    (HotpotQA sentences carry their own leading spaces).
    """
    path = Path(path)
    out = []
    for i, rec in enumerate(_source_records(path)):
        where = f"{path}: record {i}"
        if not isinstance(rec, dict):
            raise EvalDataError(f"{where}: expected a JSON object")
        rid = rec.get("_id")
        if not _is_id(rid):
            raise EvalDataError(f"{where}: field '_id' must be a string or int")
        where += f" (_id {rid!r})"
        for field in ("question", "answer"):
            if not _nonempty_str(rec.get(field)):
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
        out.append(
            {"_id": str(rid), "question": q, "answer": a, "paragraphs": paragraphs}
        )
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
        _atomic_write(dest, lambda tmp, n=n: write(tmp, n))
        written.append(dest)
    return written

"""RULER-HQA evaluation sets: load, check, download and build ``eval_{N}.json``.

Each file is a JSON list of samples. Hub files use the original field names
(``input``, ``context``, ``answers``, ``num_docs``, ``index``); ours use
``{id, question, context, answers, num_docs}``. N is the number of documents
(HotpotQA paragraphs) in each sample's context. No AReaL import here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from memagent_workflow.data.files import atomic_write

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
        atomic_write(dest, lambda tmp, src=cached: shutil.copyfile(src, tmp))
        written.append(dest)
    return written

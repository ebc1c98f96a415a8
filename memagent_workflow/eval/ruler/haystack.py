"""Haystacks that RULER downloads, read from what the user names; never fetched.

``--haystack FILE`` takes Paul Graham's essays (or any prose: a ``.txt`` file or
RULER's ``{"text": ...}`` JSON), SQuAD (the official ``{"data": [...]}`` JSON,
e.g. ``dev-v2.0.json``) or HotpotQA (the official JSON list, e.g.
``hotpot_dev_distractor_v1.json``); the kind is read from the file's shape.
``--hf-dataset NAME[:SPLIT]`` reads the same from a hub (or local) dataset:
a ``text`` column (essays), SQuAD's columns or HotpotQA's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memagent_workflow.data.files import utf8_problem
from memagent_workflow.eval.ruler.haystack_shape import hotpot_problem, squad_problem
from memagent_workflow.eval.ruler.tasks import ESSAY, HOTPOTQA, SQUAD


class HaystackError(ValueError):
    """A haystack that is missing, unreadable, of the wrong kind or too short."""


@dataclass
class QA:
    """One question with its gold documents (indices into ``Haystack.docs``)."""

    query: str
    answers: list[str]
    gold: list[int]
    related: list[int] = field(default_factory=list)  # same-article paragraphs
    evidence: list[str] = field(default_factory=list)  # supporting sentences


@dataclass
class Haystack:
    """Essay sentences, or a document pool with its questions."""

    kind: str
    source: str
    sentences: list[str] = field(default_factory=list)
    docs: list[str] = field(default_factory=list)
    qas: list[QA] = field(default_factory=list)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def essay_haystack(text: str, source: str) -> Haystack:
    """Prose cut into sentences (white space collapsed, as RULER does)."""
    text = re.sub(r"\s+", " ", text).strip()
    sentences = [s for s in _SENTENCE_END.split(text) if s]
    if len(sentences) < 2:
        raise HaystackError(
            f"{source}: essay haystack has {len(sentences)} sentence(s)"
        )
    return Haystack(ESSAY, source, sentences=sentences)


def squad_haystack(articles: list[dict], source: str) -> Haystack:
    """SQuAD articles: unique paragraphs (sorted) and answerable questions."""
    if (problem := squad_problem(articles)) is not None:
        raise HaystackError(f"{source}: {problem}")
    docs = sorted({p["context"] for a in articles for p in a["paragraphs"]})
    index = {d: i for i, d in enumerate(docs)}
    qas = []
    for a in articles:
        article = [index[p["context"]] for p in a["paragraphs"]]
        for p in a["paragraphs"]:
            own = index[p["context"]]
            for q in p["qas"]:
                answers = [x["text"] for x in q.get("answers", []) if x.get("text")]
                if q.get("is_impossible") or not answers:
                    continue
                others = [i for i in article if i != own]
                qas.append(QA(q["question"], answers, [own], others))
    return Haystack(SQUAD, source, docs=docs, qas=qas)


def hotpot_haystack(rows: list[dict], source: str) -> Haystack:
    """HotpotQA rows: unique ``title\\nparagraph`` documents and the questions."""
    if (problem := hotpot_problem(rows)) is not None:
        raise HaystackError(f"{source}: {problem}")

    def paragraphs(row: dict) -> list[str]:
        return [f"{title}\n{''.join(sents)}" for title, sents in row["context"]]

    docs = sorted({d for row in rows for d in paragraphs(row)})
    index = {d: i for i, d in enumerate(docs)}
    qas = [
        QA(
            row["question"],
            [row["answer"]],
            [index[d] for d in paragraphs(row)],
            evidence=supporting_sentences(row),
        )
        for row in rows
    ]
    return Haystack(HOTPOTQA, source, docs=docs, qas=qas)


def supporting_sentences(row: dict) -> list[str]:
    """The sentences a HotpotQA row's ``supporting_facts`` (``[title, sentence
    index]`` pairs) name; [] where it has none. A fact naming no sentence of
    the row is skipped: the facts only locate evidence for traces."""
    sentences = {title: sents for title, sents in row["context"]}
    out = []
    for fact in row.get("supporting_facts") or []:
        pair = isinstance(fact, list | tuple) and len(fact) == 2
        title, k = fact if pair else (None, None)
        sents = (sentences.get(title) or []) if isinstance(title, str) else []
        if isinstance(k, int) and 0 <= k < len(sents) and sents[k].strip():
            out.append(sents[k].strip())
    return list(dict.fromkeys(out))


def _hf_facts(facts: dict | None) -> list[tuple[str, int]]:
    """A hub HotpotQA row's ``supporting_facts`` (``{title: [...], sent_id:
    [...]}``) as the JSON file's ``[title, sentence index]`` pairs."""
    facts = facts or {}
    return list(zip(facts.get("title") or [], facts.get("sent_id") or [], strict=False))


def _from_json(data: Any, source: str) -> Haystack:
    if isinstance(data, dict) and isinstance(data.get("text"), str):
        return essay_haystack(data["text"], source)
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        return squad_haystack(data["data"], source)
    if isinstance(data, list) and data and isinstance(data[0], dict):
        if {"question", "answer", "context"} <= set(data[0]):
            return hotpot_haystack(data, source)
    raise HaystackError(
        f'{source}: not a haystack this tool reads (a .txt file, {{"text": ...}} '
        'essays, SQuAD\'s {"data": [...]} or a HotpotQA JSON list)'
    )


def read_file(path: str | Path) -> Haystack:
    """A haystack from a local file (kind read from its shape)."""
    path = Path(path)
    if path.is_dir():
        raise HaystackError(f"--haystack {path}: is a directory, not a file")
    if not path.is_file():
        raise HaystackError(f"--haystack {path}: no such file")
    try:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        raise HaystackError(f"--haystack {path}: unreadable: {exc}") from None
    if (problem := utf8_problem(text)) is not None:
        raise HaystackError(f"--haystack {path}: {problem}")
    if path.suffix != ".json":
        return essay_haystack(text, str(path))
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise HaystackError(f"--haystack {path}: not valid JSON: {exc}") from None
    except RecursionError:
        raise HaystackError(
            f"--haystack {path}: not valid JSON: nested too deeply"
        ) from None
    try:
        return _from_json(data, str(path))
    except (KeyError, TypeError) as exc:
        raise HaystackError(f"--haystack {path}: malformed: missing {exc}") from None


def read_hf_dataset(spec: str) -> Haystack:
    """A haystack from ``NAME[:SPLIT]`` via ``datasets.load_dataset`` (hub or local)."""
    import datasets

    name, _, split = spec.partition(":")
    try:
        loaded = datasets.load_dataset(name)
    except Exception as exc:  # the library raises many kinds
        raise HaystackError(f"--hf-dataset {spec}: cannot load: {exc}") from None
    if not split:
        if len(loaded) == 1:
            split = next(iter(loaded))
        elif "validation" in loaded:
            split = "validation"
        else:
            raise HaystackError(
                f"--hf-dataset {spec}: name a split (NAME:SPLIT) of {list(loaded)}"
            )
    if split not in loaded:
        raise HaystackError(
            f"--hf-dataset {spec}: no split {split!r} in {list(loaded)}"
        )
    ds = loaded[split]
    cols = set(ds.column_names)
    source = f"hf:{name}:{split}"
    if {"question", "context", "answers"} <= cols:
        articles: dict[str, dict[str, dict]] = {}
        for row in ds:
            paras = articles.setdefault(row.get("title") or "", {})
            para = paras.setdefault(
                row["context"], {"context": row["context"], "qas": []}
            )
            para["qas"].append(
                {
                    "question": row["question"],
                    "answers": [{"text": t} for t in row["answers"]["text"]],
                }
            )
        data = [{"paragraphs": list(p.values())} for p in articles.values()]
        return squad_haystack(data, source)
    if {"question", "answer", "context"} <= cols:
        rows = [
            {
                "question": r["question"],
                "answer": r["answer"],
                "context": list(
                    zip(r["context"]["title"], r["context"]["sentences"], strict=True)
                ),
                "supporting_facts": _hf_facts(r.get("supporting_facts")),
            }
            for r in ds
        ]
        return hotpot_haystack(rows, source)
    if "text" in cols:
        return essay_haystack(" ".join(ds["text"]), source)
    raise HaystackError(
        f"--hf-dataset {spec}: columns {sorted(cols)} are none of: text (essays), "
        "question/context/answers (SQuAD), question/answer/context (HotpotQA)"
    )


HOW_TO_GET = {
    ESSAY: "Paul Graham's essays as RULER uses them (a .txt file, or JSON "
    '{"text": ...})',
    SQUAD: "SQuAD 2.0's dev set (dev-v2.0.json)",
    HOTPOTQA: "HotpotQA's dev set (hotpot_dev_distractor_v1.json)",
}


def pick(haystacks: list[Haystack], kind: str, task: str) -> Haystack:
    """The haystack of ``kind`` among those given, or a message naming the need."""
    found = [h for h in haystacks if h.kind == kind]
    if not found:
        given = ", ".join(f"{h.source} ({h.kind})" for h in haystacks) or "none"
        raise HaystackError(
            f"task {task} needs the {kind} haystack: {HOW_TO_GET[kind]}. Pass it with "
            f"--haystack FILE or --hf-dataset NAME[:SPLIT]; nothing is downloaded "
            f"(given: {given})"
        )
    if len(found) > 1:
        raise HaystackError(
            f"task {task}: several {kind} haystacks given "
            f"({', '.join(h.source for h in found)}); pass one"
        )
    return found[0]

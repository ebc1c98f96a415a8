"""A tiny model that can *learn* the needle task with GRPO on CPU, built offline.

Three parts, all deterministic (the same spec gives the same files) and cached
in the output folder like ``tiny_model``:

* a word-level tokenizer over the needle task's words and the prompts' words,
  so every answer word is one token and a sentence of the task is one chunk;
* a small Qwen2 (2 layers, hidden 64: ~80K parameters);
* a format warm start: plain supervised training on demonstrations rendered
  with the run's own prompts, in which a memory turn writes one answer word
  drawn at random (not the needle's) and the final turn boxes the word found in
  memory. The model then knows the format but not the task: it starts at
  chance, 1 / len(NEEDLE_ANSWERS), and only RL can teach the memory turn to
  keep the needle.

    python -m standin.needle_model --out /tmp/needle-model [--seed 0]
"""

from __future__ import annotations

import argparse
import random
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from areal.utils import logging
from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers
from transformers import (
    GenerationConfig,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from memagent_workflow.chunking import chunk_views
from memagent_workflow.context import encode_context
from memagent_workflow.data.synthetic import (
    NEEDLE_ANSWERS,
    NEEDLE_NAMES,
    make_needle,
    needle_words,
)
from memagent_workflow.prompt_file import load_prompts
from memagent_workflow.prompts import PromptTexts
from standin.build_cache import cached_build

logger = logging.getLogger("NeedleModel")

# Bump when anything that changes the built files changes.
NEEDLE_BUILD_VERSION = 3
# Extra warm-start rounds allowed for the carry gate (each a quarter of the steps).
GATE_ROUNDS = 4

ENDOFTEXT, IM_START, IM_END, UNKNOWN = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<unk>",
)
BOX_OPEN, BOX_CLOSE = "\\boxed{", "}"

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
        return {"version": NEEDLE_BUILD_VERSION, **asdict(self)}


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


class Demos:
    """Format-only demonstrations, rendered exactly as the workflow renders turns."""

    def __init__(self, spec: NeedleModelSpec, tokenizer):
        self.spec, self.tok = spec, tokenizer
        self.rng = random.Random(spec.seed)
        self.templates: dict[str, tuple] = {}
        self.initial_memory = self.encode(spec.initial_memory)
        self.box = [self.encode(BOX_OPEN), self.encode(BOX_CLOSE)]
        # "\boxed{ WORD }" for every answer word: what a memory turn writes.
        self.boxed_answers = [self.boxed(self.encode(a)) for a in NEEDLE_ANSWERS]

    def encode(self, text: str) -> np.ndarray:
        return np.asarray(
            self.tok.encode(text, add_special_tokens=False), dtype=np.int32
        )

    def prompts(self, question: str):
        if question not in self.templates:
            texts = PromptTexts(self.spec.memory_prompt, self.spec.final_prompt)
            self.templates[question] = (
                texts.memory_template(self.tok, question),
                texts.final_template(self.tok, question),
            )
        return self.templates[question]

    def boxed(self, word: np.ndarray) -> list[int]:
        return [*self.box[0], *word, *self.box[1]]

    def shifted(self, chunk: np.ndarray) -> list[int]:
        """The box of the answer word after the chunk's ("code of NAME is WORD .")."""
        word = self.tok.convert_ids_to_tokens(int(chunk[4]))
        i = NEEDLE_ANSWERS.index(word)
        return self.boxed_answers[(i + 1) % len(NEEDLE_ANSWERS)]

    def rows(self, n: int, seed: int) -> list[dict]:
        """Questions of the demonstrations; with a memory to carry, of 1 to
        ``demo_chunks`` chunks (so that the gate meets many other names' chunks)."""
        spec = self.spec
        if not spec.carry:
            return make_needle(n, seed, spec.chunks, spec.distractors)
        rng = random.Random(seed)
        return [
            row
            for _ in range(n)
            for row in make_needle(
                1,
                rng.randrange(1 << 30),
                rng.randint(1, spec.demo_chunks),
                spec.distractors,
            )
        ]

    def batch(self, n: int) -> list[tuple[np.ndarray, list[int], bool]]:
        """``(prompt, target, is_final)`` for every turn of ``n`` random questions."""
        return self.batch_of(self.rows(n, self.rng.randrange(1 << 30)))

    def batch_of(self, rows: list[dict]) -> list[tuple[np.ndarray, list[int], bool]]:
        """``(prompt, target, is_final)`` for every turn of ``rows``."""
        spec = self.spec
        eos = [self.tok.eos_token_id]
        pairs = []
        for row in rows:
            memory_t, final_t = self.prompts(row["question"])
            memory = self.initial_memory
            ids = encode_context(self.tok, row["context"])
            named = self.encode(f"code of {row['question'].split()[-2]}")
            for chunk in chunk_views(ids, spec.chunk_tokens)[0]:
                if spec.carry and not np.array_equal(chunk[:3], named):
                    written = memory.tolist()  # the memory again, as it was
                elif spec.carry and self.rng.random() < spec.shift:
                    written = self.shifted(chunk)  # read, but never the task
                else:  # any answer word, whatever the chunk says: not the task
                    written = self.rng.choice(self.boxed_answers)
                # A memory that fills its token budget ends without EOS, as in a run.
                target = [*written, *eos[: len(written) < spec.memory_tokens]]
                pairs.append((memory_t.build(memory, chunk), target, False))
                memory = np.asarray(written, dtype=np.int32)
            pairs.append((final_t.build(memory), [*memory.tolist(), *eos], True))
        return pairs


def _padded(pairs, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ``input_ids`` and a mask of the target tokens."""
    width = max(len(p) + len(t) for p, t, _ in pairs)
    ids = torch.full((len(pairs), width), pad_id, dtype=torch.long)
    target = torch.zeros(len(pairs), width, dtype=torch.bool)
    for i, (prompt, answer, _) in enumerate(pairs):
        seq = [*prompt.tolist(), *answer]
        ids[i, : len(seq)] = torch.tensor(seq)
        target[i, len(prompt) : len(seq)] = True
    return ids, target


def warm_start(model, demos: Demos, steps: int, lr: float) -> float:
    """Supervised steps on format demonstrations; returns the last loss."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    # Decayed to 0: a confident final-turn format, which RL's noisy early steps
    # then do not break (with a constant rate, some seeds lost it and the
    # memory collapsed onto the word the final turn still boxed best).
    decay = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1 - step / steps)
    model.train()
    loss = torch.tensor(0.0)
    for step in range(steps):
        ids, target = _padded(
            demos.batch(demos.spec.warm_start_questions), demos.tok.pad_token_id
        )
        logits = model(input_ids=ids).logits[:, :-1]  # right padding: causal
        loss = torch.nn.functional.cross_entropy(
            logits[target[:, 1:]], ids[:, 1:][target[:, 1:]]
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        decay.step()
        if (step + 1) % 500 == 0:
            logger.info(f"warm start step {step + 1}: loss {loss.item():.4f}")
    model.eval()
    return loss.item()


@torch.no_grad()
def check_format(model, demos: Demos) -> None:
    """The warm start taught the format: greedy turns are well-formed.

    A memory turn boxes an answer word; the final turn repeats the memory's box.
    """
    box_len = len(demos.boxed_answers[0])
    for prompt, target, is_final in demos.batch(8):
        ids = torch.tensor([prompt.tolist()])
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=len(target),
            do_sample=False,
        )[0, ids.shape[1] :].tolist()
        boxes = demos.boxed_answers
        ok = out == target or (
            not is_final and out[:box_len] in boxes and target[:box_len] in boxes
        )
        if not ok:
            raise RuntimeError(
                f"the warm start did not teach the format: {demos.tok.decode(out)!r} "
                f"after {demos.tok.decode(prompt.tolist())!r}"
            )


@torch.no_grad()
def gate_misses(model, demos: Demos) -> int:
    """(asked name, chunk's name) pairs whose first memory token, greedy and from
    the initial memory, is not the carry warm start's: ``\\boxed{`` when the
    chunk is about the asked name, the initial memory's first token otherwise."""
    d, misses = demos, 0
    for asked in NEEDLE_NAMES:
        memory_t, _ = d.prompts(f"what is the code of {asked} ?")
        prompts = [
            memory_t.build(d.initial_memory, d.encode(f"code of {name} is red ."))
            for name in NEEDLE_NAMES
        ]
        logits = model(input_ids=torch.tensor(np.stack(prompts).astype(np.int64)))
        first = logits.logits[:, -1].argmax(-1).tolist()
        want = [
            d.box[0][0] if n == asked else d.initial_memory[0] for n in NEEDLE_NAMES
        ]
        misses += sum(f != w for f, w in zip(first, want, strict=True))
    return misses


def warm_start_gate(model, demos: Demos) -> float:
    """The carry warm start, continued (decaying rounds of a quarter of its steps)
    until the gate is right for every pair of names; returns the last loss."""
    spec = demos.spec
    loss = warm_start(model, demos, spec.warm_start_steps, spec.warm_start_lr)
    for round_ in range(1, GATE_ROUNDS + 1):
        if not (misses := gate_misses(model, demos)):
            return loss
        logger.info(f"gate wrong on {misses} name pairs: warm start round {round_}")
        loss = warm_start(
            model, demos, spec.warm_start_steps // 4, spec.warm_start_lr / 3
        )
    if misses := gate_misses(model, demos):
        raise RuntimeError(f"the carry warm start's gate is wrong on {misses} pairs")
    return loss


def _write(out: Path, spec: NeedleModelSpec) -> None:
    tokenizer = build_tokenizer(spec)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same float sums on any machine
    try:
        with torch.random.fork_rng(devices=[]):
            model = init_model(spec, tokenizer)
            demos = Demos(spec, tokenizer)
            loss = (
                warm_start_gate(model, demos)
                if spec.carry
                else warm_start(model, demos, spec.warm_start_steps, spec.warm_start_lr)
            )
            check_format(model, demos)
    finally:
        torch.set_num_threads(threads)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    logger.info(
        f"needle model: {sum(p.numel() for p in model.parameters()):,} parameters, "
        f"{len(tokenizer)} tokens, warm-start loss {loss:.4f}"
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

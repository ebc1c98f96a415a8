"""The needle model's format warm start: demonstrations, training, checks.

Demonstrations are rendered exactly as the workflow renders turns, through the
run's own prompt templates. A memory turn writes one answer word drawn at random
(never chosen by what the chunk says); with ``carry``, it keeps the memory it was
given unless the chunk is about the asked name, and a share (``shift``) of its
writes box the word after the chunk's. The final turn boxes the memory's word.
A share (``overwrite``) of the carry demonstrations start from a random box
instead of the initial memory, so the asked name's chunk replaces a code
already written. The model then knows the format (and, with ``carry``, when to
write and where to read), not the task: it starts at or below chance, and only
RL can teach the memory turn to keep the needle. ``standin.needle_model`` builds with it.
"""

from __future__ import annotations

import random

import numpy as np
import torch
from areal.utils import logging
from tqdm import tqdm

from memagent_workflow.chunking import chunk_views
from memagent_workflow.context import encode_context
from memagent_workflow.data.synthetic import NEEDLE_ANSWERS, NEEDLE_NAMES, make_needle
from memagent_workflow.prompts import PromptTexts

logger = logging.getLogger("NeedleModel")  # in the logs only
shown = logging.getLogger("StandinBuild")  # on the terminal too (infra.terminal)

BOX_OPEN, BOX_CLOSE = "\\boxed{", "}"
# Extra warm-start rounds allowed for the carry gate (each a quarter of the steps).
GATE_ROUNDS = 4


class Demos:
    """Format-only demonstrations, rendered exactly as the workflow renders turns."""

    def __init__(self, spec, tokenizer):  # a standin.needle_model.NeedleModelSpec
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
            # No draw when overwrite is 0: builds without it keep their demonstrations.
            if spec.carry and spec.overwrite and self.rng.random() < spec.overwrite:
                memory = np.asarray(self.rng.choice(self.boxed_answers), np.int32)
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
    ids = np.full((len(pairs), width), pad_id, dtype=np.int64)
    target = np.zeros((len(pairs), width), dtype=bool)
    for i, (prompt, answer, _) in enumerate(pairs):  # numpy: a tenth of torch's time
        end = len(prompt) + len(answer)
        ids[i, : len(prompt)] = prompt
        ids[i, len(prompt) : end] = answer
        target[i, len(prompt) : end] = True
    return torch.from_numpy(ids), torch.from_numpy(target)


def warm_start(
    model, demos: Demos, steps: int, lr: float, bar: tqdm | None = None
) -> float:
    """Supervised steps on format demonstrations; returns the last loss.

    ``bar``, if given, advances by one per step and shows the loss.
    """
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
        if bar is not None:
            bar.set_postfix_str(f"loss {loss.item():.4f}", refresh=False)
            bar.update(1)
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


def warm_start_gate(model, demos: Demos, bar: tqdm | None = None) -> float:
    """The carry warm start, continued (decaying rounds of a quarter of its steps)
    until the gate is right for every pair of names; returns the last loss.

    ``bar`` as in `warm_start`; each extra round adds its steps to its total.
    """
    spec = demos.spec
    loss = warm_start(model, demos, spec.warm_start_steps, spec.warm_start_lr, bar)
    for round_ in range(1, GATE_ROUNDS + 1):
        if not (misses := gate_misses(model, demos)):
            return loss
        shown.info(f"gate wrong on {misses} name pairs: warm start round {round_}")
        if bar is not None:
            bar.total += spec.warm_start_steps // 4
            bar.set_description(f"warm start, gate round {round_}")
        loss = warm_start(
            model, demos, spec.warm_start_steps // 4, spec.warm_start_lr / 3, bar
        )
    if misses := gate_misses(model, demos):
        raise RuntimeError(f"the carry warm start's gate is wrong on {misses} pairs")
    return loss

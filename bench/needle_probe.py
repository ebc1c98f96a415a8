"""A fast probe for issue-18 recipes: GRPO on the K-chunk needle task in plain PyTorch.

The real stack (AReaL, the stand-in, the FSDP actor) takes minutes a run; this
probe runs the same model (`standin.needle_model`), prompts, needle data and
GRPO shape (questions x episodes a step, one advantage per episode shared by
its rows, two mini-batches) in one process, a step in well under a second, so
that warm starts and learning rates can be compared before a recipe is ported.
It is a research tool, not the product: no staleness, no server, no PPO clip.

Warm starts (``--warm``), all at chance by construction:

* ``random``: every memory turn boxes a random code (the CPU main job's);
* ``carry``: the memory is re-boxed unless the chunk is about the asked name,
  where a random code is boxed (also on the first turn);
* ``keep_empty``: the memory, the initial one included, is kept unless the chunk
  is about the asked name, where a random code is boxed.

    uv run python bench/needle_probe.py --warm keep_empty --demo-chunks 8 \
        --warm-steps 2000 --heads 8 --init-range 0.1 --lr-decay --steps 50

(the main job's recipe, docs/learning.md, "Across turns").

Prints the warm start's and then every 10 steps the held-out accuracy at
``--eval-chunks`` (sampled as ``config_eval_needle.yaml``: temperature 0.7,
top-p 0.95). docs/learning.md lists what was tried with it.
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np
import torch
import torch.nn.functional as F

from memagent_workflow.chunking import chunk_views
from memagent_workflow.context import encode_context
from memagent_workflow.data.synthetic import make_needle
from memagent_workflow.prompts import load_prompts
from standin.needle_model import NeedleModelSpec, build_tokenizer, init_model
from standin.needle_warm_start import Demos, _padded

SENTENCE = 6  # tokens per needle sentence: one chunk


class Probe:
    def __init__(self, args: argparse.Namespace):
        self.args, self.rng = args, random.Random(args.seed)
        prompts = load_prompts(args.prompts)
        spec = NeedleModelSpec(
            prompts.memory_update,
            prompts.final_answer,
            initial_memory=args.initial_memory,
            seed=args.seed,
            layers=args.layers,
            hidden_size=args.hidden,
            heads=args.heads,
            init_range=args.init_range,
        )
        self.tok = build_tokenizer(spec)
        self.model = init_model(spec, self.tok)
        self.demos = Demos(spec, self.tok)
        self.eos, self.pad = self.tok.eos_token_id, self.tok.pad_token_id
        self.open = int(self.demos.box[0][0])
        self.close = int(self.demos.box[1][0])

    # ------------------------------------------------------------ warm start
    def demo_pairs(self, n: int) -> list[tuple[np.ndarray, list[int], bool]]:
        args, d = self.args, self.demos
        chunks = self.rng.randint(1, args.demo_chunks or args.chunks)
        pairs = []
        for row in make_needle(n, self.rng.randrange(1 << 30), chunks, 1.0):
            memory_t, final_t = d.prompts(row["question"])
            memory = d.initial_memory
            name = self.tok.convert_tokens_to_ids(row["question"].split()[-2])
            doc = chunk_views(encode_context(self.tok, row["context"]), SENTENCE)[0]
            for t, chunk in enumerate(doc):
                about = int(chunk[2]) == name
                keep = not about and (
                    args.warm == "keep_empty" or (args.warm == "carry" and t > 0)
                )
                written = list(memory) if keep else self.rng.choice(d.boxed_answers)
                if about and self.rng.random() < args.shift:
                    written = d.boxed_answers[
                        (d.boxed_answers.index(d.boxed([int(chunk[4])])) + 1)
                        % len(d.boxed_answers)
                    ]
                target = written if len(written) == 3 else [*written, self.eos]
                pairs.append((memory_t.build(memory, chunk), target, False))
                memory = np.asarray(written, dtype=np.int32)
            pairs.append((final_t.build(memory), [*memory.tolist(), self.eos], True))
        return pairs

    def warm_start(self) -> float:
        steps = self.args.warm_steps
        opt = torch.optim.Adam(self.model.parameters(), lr=3e-3)
        decay = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1 - s / steps)
        loss = torch.tensor(0.0)
        for _ in range(steps):
            ids, target = _padded(self.demo_pairs(32), self.pad)
            logits = self.model(input_ids=ids).logits[:, :-1]
            loss = F.cross_entropy(logits[target[:, 1:]], ids[:, 1:][target[:, 1:]])
            opt.zero_grad()
            loss.backward()
            opt.step()
            decay.step()
        return loss.item()

    # ------------------------------------------------------------ episodes
    def left_padded(self, prompts: list[np.ndarray]) -> tuple[torch.Tensor, ...]:
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, p in enumerate(prompts):
            ids[i, width - len(p) :] = torch.as_tensor(p.astype(np.int64))
            mask[i, width - len(p) :] = 1
        return ids, mask

    @torch.no_grad()
    def sample(self, prompts, n_new: int, temperature: float, top_p: float):
        ids, mask = self.left_padded(prompts)
        out = []
        for _ in range(n_new):
            logits = self.model(input_ids=ids, attention_mask=mask).logits[:, -1]
            probs = F.softmax(logits.float() / temperature, -1)
            sorted_p, order = probs.sort(-1, descending=True)
            sorted_p[(sorted_p.cumsum(-1) - sorted_p) >= top_p] = 0
            token = order.gather(-1, torch.multinomial(sorted_p, 1))[:, 0]
            out.append(token)
            ids = torch.cat([ids, token[:, None]], 1)
            mask = torch.cat([mask, torch.ones_like(token[:, None])], 1)
        return torch.stack(out, 1)

    def until_eos(self, out: torch.Tensor) -> np.ndarray:
        tokens = out.tolist()
        if self.eos in tokens:
            tokens = tokens[: tokens.index(self.eos)]
        return np.asarray(tokens, dtype=np.int32)

    def episodes(self, rows, temperature: float, top_p: float):
        """Rewards and, per turn, (prompts, outputs) of one episode per row."""
        docs = [
            (
                *self.demos.prompts(r["question"]),
                chunk_views(encode_context(self.tok, r["context"]), SENTENCE)[0],
            )
            for r in rows
        ]
        memories = [self.demos.initial_memory] * len(rows)
        turns = []
        for t in range(len(docs[0][2])):
            prompts = [
                m_t.build(m, doc[t])
                for (m_t, _, doc), m in zip(docs, memories, strict=True)
            ]
            out = self.sample(prompts, 3, temperature, top_p)
            turns.append((prompts, out))
            memories = [self.until_eos(o) for o in out]
        prompts = [f_t.build(m) for (_, f_t, _), m in zip(docs, memories, strict=True)]
        out = self.sample(prompts, 4, temperature, top_p)
        turns.append((prompts, out))
        gold = [self.tok.convert_tokens_to_ids(r["answers"][0]) for r in rows]
        reward = [
            float(o[:3].tolist() == [self.open, g, self.close])
            for o, g in zip(out, gold, strict=True)
        ]
        return torch.tensor(reward), turns

    def accuracy(self, chunks: int, n: int = 64) -> float:
        rows = make_needle(n, 1000 + chunks, chunks, 1.0, split="valid")
        return self.episodes(rows, 0.7, 0.95)[0].mean().item()

    # ------------------------------------------------------------ GRPO
    def step(self, opt) -> float:
        args = self.args
        questions = make_needle(
            args.questions, self.rng.randrange(1 << 30), args.chunks, 1.0
        )
        rows = [r for r in questions for _ in range(args.episodes)]
        reward, turns = self.episodes(rows, args.temperature, 1.0)
        grouped = reward.view(args.questions, args.episodes)
        adv = (grouped - grouped.mean(1, keepdim=True)).view(-1)
        for mb in torch.randperm(len(adv)).chunk(2):
            loss, n_tokens = 0.0, 0
            for prompts, out in turns:
                ids, mask = self.left_padded([prompts[i] for i in mb.tolist()])
                ids = torch.cat([ids, out[mb]], 1)
                mask = torch.cat([mask, torch.ones_like(out[mb])], 1)
                logits = self.model(input_ids=ids, attention_mask=mask).logits
                logits = logits[:, -out.shape[1] - 1 : -1].float() / args.temperature
                logp = torch.log_softmax(logits, -1).gather(-1, out[mb][..., None])
                loss = loss - (adv[mb][:, None] * logp[..., 0]).sum()
                n_tokens += logp.numel()
            opt.zero_grad()
            (loss / n_tokens).backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            opt.step()
        return reward.mean().item()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--warm", choices=["random", "carry", "keep_empty"], default="carry"
    )
    ap.add_argument("--chunks", type=int, default=2, help="training length K")
    ap.add_argument("--demo-chunks", type=int, default=0, help="0: --chunks")
    ap.add_argument("--warm-steps", type=int, default=1000)
    ap.add_argument("--initial-memory", default="none")
    ap.add_argument("--prompts", default="prompts/needle.yaml")
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--init-range", type=float, default=0.02)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--lr-decay", action="store_true", help="linearly to 0")
    ap.add_argument("--shift", type=float, default=0.0)
    ap.add_argument("--temperature", type=float, default=1.0, help="of rollouts")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--questions", type=int, default=16)
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--eval-chunks", default="1,2,16,128")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    probe, start = Probe(args), time.time()
    lengths = [int(k) for k in args.eval_chunks.split(",")]

    def report(label: str) -> None:
        acc = {k: round(probe.accuracy(k), 2) for k in lengths}
        print(f"{label}: accuracy by chunks {acc} ({time.time() - start:.0f} s)")

    print(f"warm start loss {probe.warm_start():.4f}")
    report("warm start")
    opt = torch.optim.Adam(probe.model.parameters(), lr=args.lr)
    decay = (lambda s: 1 - s / args.steps) if args.lr_decay else (lambda s: 1.0)
    warmup = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 10) * decay(s)
    )
    for step in range(1, args.steps + 1):
        reward = probe.step(opt)
        warmup.step()
        if step % 10 == 0:
            report(f"step {step} (train reward {reward:.2f})")


if __name__ == "__main__":
    main()

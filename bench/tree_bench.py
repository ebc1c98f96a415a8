"""Packed vs tree (paper order) vs tree (section first), side by side in one run.

Tokens: one GRPO group's rows at the paper's shapes (16 episodes, 5,000-token
chunks, memory and answers 1,024, 8 memory turns + the final one;
``bench.tree_rows.paper_shape``), packed as AReaL's tree path packs them
(``_greedy_build_tries``, first fit, rows in the actor's trie order; each trie
padded to FlexAttention's block, ``actor.tree_padding: block``, and to
``max_tokens_per_mb`` as AReaL pads it) and as its packed path does (every row
token once). At ``config.yaml``'s 16,384 and at a size
that holds a group's section-first turn as one trie.

Mini-batch cuts: the share of packed a group's tries hold (before padding)
when ``actor.tree_minibatches`` cuts the update into ``config.yaml``'s 16
mini-batches and the CPU job's 2 (``groups``: a group in one; ``dealt``,
``runs``: in every one, each part its own trie).

Wall time: the project's actor (`StandinPPOActor`, a tiny model, CPU, eager
FlexAttention) runs one PPO update (its forward and backward) on one group at
the shapes divided by ``--scale`` (tokens computed counted by the actor itself),
the tries padded either way.

    uv run python -m bench.tree_bench            # ~5 minutes on 2 cores
    uv run python -m bench.tree_bench --smoke    # toy sizes (tests)
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, replace
from pathlib import Path

# Eager FlexAttention, as every CPU path of the project runs it: with torch 2.9.1
# AReaL's compiled flex_attention runs a forward-only pass on CPU, but a training
# forward fails to compile (InductorError: IndexError, measured here).
os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")

import torch  # noqa: E402
from areal.models.tree_attn.constants import BLOCK_SIZE as BLOCK  # noqa: E402

from bench.tree_rows import ORDERS, Shape, group_batch, paper_shape
from memagent_workflow.actor_config import TREE_PADDING
from memagent_workflow.rows import trie_tokens
from memagent_workflow.trainer.shared_prefix import (
    dealt_minibatches,
    dealt_runs,
    row_tokens,
    take_rows,
    trie_order,
)
from memagent_workflow.trainer.trie_padding import block_size

OUT = Path(__file__).parent / "results" / "tree_training.json"
MODES = ("packed", *(f"tree+{o}" for o in ORDERS))
PADDINGS = TREE_PADDING  # actor.tree_padding: "block", "maximum"


def turn_trie_size(shape: Shape) -> int:
    """A group's section-first memory turn as one trie, rounded up to a block."""
    size = shape.instruction + shape.chunk + shape.group * 2 * shape.memory
    return block_size(size, BLOCK)


def count_tokens(shape: Shape, mode: str, max_tokens: int) -> dict[str, int]:
    """Row tokens, the tokens one group's pass computes in ``mode`` (each trie
    padded to FlexAttention's block, ``actor.tree_padding: block``; and to
    ``max_tokens`` as AReaL pads it) and the tries' own tokens (AReaL's
    ``tree_token_ratio`` counts these: padding left out)."""
    from areal.models.tree_attn.tree import _greedy_build_tries

    order = "memory_first" if mode == "packed" else mode.removeprefix("tree+")
    data = group_batch(shape, order)
    rows = int(data["attention_mask"].sum())
    if mode == "packed":
        return {"rows": rows, "computed": rows, "computed_maximum": rows,
                "trie_tokens": rows, "tries": 0}  # fmt: skip
    tries, held = _greedy_build_tries(take_rows(data, trie_order(data)), max_tokens)
    return {"rows": rows, "computed": sum(block_size(h, BLOCK) for h in held),
            "computed_maximum": len(tries) * max_tokens,
            "trie_tokens": sum(held), "tries": len(tries)}  # fmt: skip


def token_table(shape: Shape, sizes: list[int]) -> list[dict]:
    """Every mode at every micro-batch size: tokens and the share of packed."""
    table = []
    for size in sizes:
        base = None
        for mode in MODES:
            c = count_tokens(shape, mode, size)
            base = base or c["computed"]
            table.append({"max_tokens_per_mb": size, "mode": mode, **c,
                          "of_packed": round(c["computed"] / base, 3),
                          "of_packed_maximum": round(c["computed_maximum"] / base, 3),
                          "tries_of_packed": round(c["trie_tokens"] / base, 3)})  # fmt: skip
    return table


def cut_table(shape: Shape, minibatches: list[int]) -> list[dict]:
    """Each order and ``actor.tree_minibatches`` cut: the tokens of one group's
    part of each mini-batch as one trie, as a share of its row tokens."""
    table = []
    for order in ORDERS:
        data = group_batch(shape, order)
        data = take_rows(data, trie_order(data))
        rows = int(data["attention_mask"].sum())
        for n in minibatches:
            size = data["attention_mask"].shape[0]
            for cut, parts in (
                ("groups", [list(range(size))]),
                ("dealt", dealt_minibatches(size, n)),
                ("runs", dealt_runs([data], n)),
            ):
                held = sum(trie_tokens(row_tokens(take_rows(data, p))) for p in parts)
                table.append({"order": order, "ppo_n_minibatches": n, "cut": cut,
                              "tries_of_packed": round(held / rows, 3)})  # fmt: skip
    return table


def wall_table(shape: Shape, sizes: list[int], model: Path) -> list[dict]:
    """One PPO update per mode and size on the tiny model: seconds, tokens."""
    from bench.tree_actor_setup import actor_config, batch_of, built_actor
    from standin.launch import find_free_port

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(find_free_port()),
                      RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")  # fmt: skip
    from areal.utils import stats_tracker

    table = []
    runs = [("packed", "block"), *((m, p) for m in MODES[1:] for p in PADDINGS)]
    for size in sizes:
        for mode, padding in runs:
            tree = mode != "packed"
            config = actor_config(str(model), tree, padding)
            config.mb_spec = replace(config.mb_spec, max_tokens_per_mb=size)
            actor = built_actor(config)
            order = "memory_first" if not tree else mode.removeprefix("tree+")
            data = batch_of(shape, order)
            batch = [dict(data)]
            batch[0]["prox_logp"] = actor.compute_logp(batch)[0]
            batch[0]["ref_logp"] = batch[0]["prox_logp"]
            batch = actor.compute_advantages(batch)
            stats_tracker.export_all(reset=True)
            start = time.perf_counter()
            actor.ppo_update(batch)
            wall = time.perf_counter() - start
            stats = stats_tracker.export_all(reset=True)
            actor.destroy()
            table.append({"max_tokens_per_mb": size, "mode": mode,
                          "padding": padding if tree else None,
                          "computed": int(stats["memagent/actor_tokens_computed"]),
                          "rows": int(stats["memagent/actor_tokens_rows"]),
                          "step_s": round(wall, 2)})  # fmt: skip
            print(f"  {size:>6} {mode:<20} {padding if tree else '':<8} "
                  f"{table[-1]['step_s']:>7.2f} s", flush=True)  # fmt: skip
    return table


def scaled(shape: Shape, scale: int) -> Shape:
    """``shape`` with every token size divided by ``scale`` (the group kept)."""
    return replace(shape, instruction=max(2, shape.instruction // scale),
                   chunk=shape.chunk // scale, memory=shape.memory // scale,
                   answer=shape.answer // scale)  # fmt: skip


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=10, help="wall-time shapes: paper / N")
    ap.add_argument("--smoke", action="store_true", help="toy sizes")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    paper = paper_shape()
    if args.smoke:
        paper = replace(paper, group=4, turns=2)
        args.scale = 50
    sizes = [16384, turn_trie_size(paper)]
    print(f"tokens of one group at the paper's shapes ({asdict(paper)})", flush=True)
    tokens = token_table(paper, sizes)
    for r in tokens:
        print(f"  {r['max_tokens_per_mb']:>6} {r['mode']:<20} {r['computed']:>9} "
              f"({r['of_packed']:.1%} of packed; padded to the maximum "
              f"{r['of_packed_maximum']:.1%}; {r['tries']} tries holding "
              f"{r['tries_of_packed']:.1%} before padding)")  # fmt: skip
    cuts = cut_table(paper, [16, 2])
    print("one group's tries (before padding) by mini-batch cut", flush=True)
    for r in cuts:
        print(f"  {r['order']:<14} {r['ppo_n_minibatches']:>2} mini-batches "
              f"{r['cut']:<7} {r['tries_of_packed']:.0%} of packed")  # fmt: skip
    small = scaled(paper, args.scale)
    small_sizes = [block_size(-(-s // args.scale), BLOCK) for s in sizes]
    print(f"one PPO update of one group at 1/{args.scale} of the shapes", flush=True)
    from standin.tiny_model import build_tiny_model

    builds = Path(os.environ.get("MEMAGENT_TEST_BUILDS", "outputs/bench"))
    model = build_tiny_model(builds / "tiny_model", seed=0)
    walls = wall_table(replace(small, vocab=200), small_sizes, model)
    result = {"paper_shape": asdict(paper), "tokens": tokens, "cuts": cuts, "wall_shape":
              asdict(small), "wall": walls, "scale": args.scale}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"written: {args.out}")
    return result


if __name__ == "__main__":
    main()

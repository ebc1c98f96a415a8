"""Prefill and decode rates of each inference server, on turns of the config's
real size, through AReaL's own client for the engine (SGLang or vLLM).

Per server, ``turns`` requests at once (the concurrency the config plans per
server, as far as its KV cache holds them), each a different prompt of
``prompt_tokens`` tokens (the fullest memory turn: template, memory and chunk
at ``memagent.*``'s budgets; different prompts, so no prefix cache helps):
first with one new token each (the time is the prefill of all of them), then
with ``new_tokens`` each, EOS ignored (the rest of the time is their decode).
A turn of few new tokens decodes in less time than the prefill's own spread, so
the decode round generates at least ``DECODE_MIN`` tokens (as far as
``gconfig.max_tokens`` leaves room; AReaL's client caps them there), and the
rate counts the tokens after the first. One untimed round first takes what a
server does once (allocations, graph capture, lazy loading) out of the figures;
each timing is the fastest of ``REPEATS`` rounds, so a moment of load on the
host does not make the rates.
Prefill is counted per server, all turns together; decode per request, as the
step model counts them (``preflight.rates``).
"""

from __future__ import annotations

import asyncio
import random
import time
from concurrent.futures import ThreadPoolExecutor
from copy import deepcopy
from typing import Any

from areal.api import ModelRequest

from memagent_workflow.infra.engines import engine_class, rollout_backend

REPEATS = 3
DECODE_MIN = 32


def prompts(vocab: list[int], count: int, length: int, rng: random.Random):
    """``count`` different prompts of ``length`` ids drawn from ``vocab``."""
    return [rng.choices(vocab, k=length) for _ in range(count)]


def plain_ids(tokenizer: Any) -> list[int]:
    """Ids of ordinary tokens (no special or added ones)."""
    special = set(tokenizer.all_special_ids)
    return [i for i in range(tokenizer.vocab_size) if i not in special]


async def _timed(
    engine: Any, batch: list[list[int]], gconfig: Any
) -> tuple[float, int]:
    """Seconds for ``batch`` at once, and the tokens they generated."""
    start = time.perf_counter()
    replies = await asyncio.gather(
        *(
            engine.agenerate(ModelRequest(input_ids=ids, gconfig=gconfig))
            for ids in batch
        )
    )
    return time.perf_counter() - start, sum(len(r.output_tokens) for r in replies)


async def _bench_one(
    engine: Any, config: Any, vocab: list[int], turns: int, prompt_tokens: int,
    new_tokens: int, rng: random.Random,
) -> dict[str, float]:  # fmt: skip
    one = config.gconfig.new(n_samples=1, max_new_tokens=1, min_new_tokens=0)
    full = config.gconfig.new(
        n_samples=1,
        max_new_tokens=max(new_tokens, DECODE_MIN),
        min_new_tokens=0,
        ignore_eos=True,
    )
    await _timed(engine, prompts(vocab, turns, prompt_tokens, rng), one)
    prefill_s = total_s = float("inf")
    for _ in range(REPEATS):
        batch = prompts(vocab, turns, prompt_tokens, rng)
        prefill_s = min(prefill_s, (await _timed(engine, batch, one))[0])
        batch = prompts(vocab, turns, prompt_tokens, rng)
        seconds, out = await _timed(engine, batch, full)
        total_s = min(total_s, seconds)
    decode_s = total_s - prefill_s
    decoded = out / turns - 1  # per request, after the first (the prefill's)
    if decode_s <= 0 or decoded <= 0:
        raise RuntimeError(
            f"server bench: {turns} requests decoding {out // turns} tokens each "
            f"took no time beyond their prefill ({total_s:.3f} s vs "
            f"{prefill_s:.3f} s): no decode rate can be read from this server"
        )
    return {
        "turns": turns,
        "prompt_tokens": prompt_tokens,
        "new_tokens": new_tokens,
        "decode_tokens": out / turns,
        "prefill_s": prefill_s,
        "decode_s": decode_s,
        "prefill_tokens_per_s": turns * prompt_tokens / prefill_s,
        "decode_tokens_per_s": decoded / decode_s,
    }


def bench_servers(
    config: Any,
    addresses: list[str],
    turns: int,
    prompt_tokens: int,
    new_tokens: int,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Each server's rates (``bench`` of the module doc), one server at a time."""
    from memagent_workflow.workflow import load_tokenizer

    if not addresses:
        raise RuntimeError("server bench: no inference server address found")
    vocab = plain_ids(load_tokenizer(config.tokenizer_path))
    rng = random.Random(seed)
    found = []
    for addr in addresses:
        engine = engine_class(rollout_backend(config))(deepcopy(config.rollout))
        engine.initialize(addr=addr)
        try:
            rates = _in_thread(
                _bench_one(engine, config, vocab, turns, prompt_tokens, new_tokens, rng)
            )
        finally:
            engine.destroy()
        found.append({"server": addr, **rates})
    return found


def _in_thread(coro: Any) -> Any:
    """Run ``coro`` on a loop of its own (the caller's thread may hold one)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()

"""The server bench's arithmetic (smoke/bench.py) against an engine of known speed.

The fake engine takes ``PREFILL`` seconds per request batch plus ``PER_TOKEN`` per
token after the first, and is slow on its first round (a server's one-off work), on a
virtual clock the bench reads in place of ``time.perf_counter``, so each figure the
bench reads is known in advance, whatever the host's load.
"""

import asyncio
import random
from types import SimpleNamespace

import pytest
from areal.api.cli_args import GenerationHyperparameters

from memagent_workflow.smoke import bench

PREFILL, PER_TOKEN, FIRST_ROUND = 0.05, 0.004, 0.5


class Clock:
    """Time moves only when read: to the end of the requests started so far."""

    def __init__(self):
        self.t = self.end = 0.0

    def __call__(self) -> float:
        self.t = max(self.t, self.end)
        return self.t


class Engine:
    """Requests started together share one prefill and decode in lock step."""

    def __init__(self, clock: Clock):
        self.clock = clock
        self.rounds: list[int] = []  # max_new_tokens of each request seen
        self.first = True

    async def agenerate(self, req):
        new = min(req.gconfig.max_new_tokens, req.gconfig.max_tokens - 20)
        self.rounds.append(req.gconfig.max_new_tokens)
        delay = PREFILL + PER_TOKEN * (new - 1) + (FIRST_ROUND if self.first else 0)
        start = self.clock.t
        await asyncio.sleep(0)
        self.clock.end = max(self.clock.end, start + delay)
        self.first = False
        return SimpleNamespace(output_tokens=[7] * new)


def run(new_tokens: int, monkeypatch, max_tokens: int = 200):
    config = SimpleNamespace(
        gconfig=GenerationHyperparameters(max_new_tokens=4, max_tokens=max_tokens)
    )
    clock = Clock()
    monkeypatch.setattr(bench.time, "perf_counter", clock)
    engine = Engine(clock)
    rates = asyncio.run(
        bench._bench_one(
            engine, config, list(range(100, 200)), 4, 20, new_tokens, random.Random(0)
        )
    )
    return engine, rates


def test_a_short_turn_is_decoded_to_decode_min_and_its_rate_counts_after_the_first(
    monkeypatch,
):
    _, rates = run(new_tokens=3, monkeypatch=monkeypatch)
    assert rates["new_tokens"] == 3
    assert rates["decode_tokens"] == bench.DECODE_MIN
    # the first round's one-off cost is in neither figure
    assert rates["prefill_s"] == pytest.approx(PREFILL)
    assert rates["decode_tokens_per_s"] == pytest.approx(1 / PER_TOKEN)
    assert rates["prefill_tokens_per_s"] == pytest.approx(4 * 20 / rates["prefill_s"])


def test_a_long_turn_decodes_its_own_length(monkeypatch):
    engine, rates = run(new_tokens=64, monkeypatch=monkeypatch)
    assert rates["decode_tokens"] == 64
    assert max(engine.rounds) == 64
    # untimed round + REPEATS x (prefill round + decode round), 4 requests each
    assert len(engine.rounds) == 4 * (1 + 2 * bench.REPEATS)


def test_no_room_to_decode_is_an_error_not_a_rate(monkeypatch):
    with pytest.raises(RuntimeError, match="no decode rate"):
        run(
            new_tokens=3, monkeypatch=monkeypatch, max_tokens=21
        )  # the fake's prompt (20) leaves one token

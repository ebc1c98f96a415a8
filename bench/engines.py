"""Inference engines for the benchmarks: an instant one and a simulated GPU.

Both implement the part of AReaL's ``InferenceEngine`` that ``MemAgentWorkflow``
and ``WorkflowExecutor`` use: ``agenerate``, ``get_version`` / ``set_version``.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
import zlib
from dataclasses import asdict, dataclass

import numpy as np
from areal.api.io_struct import ModelRequest, ModelResponse

POOL_TOKENS = 4096
MEMORY_TEXT = "Memory: the river in Paris was built by Maria Smith in 1875. "


class _Outputs:
    """Pre-built output token lists, sliced per request (no per-call encoding)."""

    def __init__(self, tokenizer):
        ids = tokenizer.encode(MEMORY_TEXT, add_special_tokens=False)
        self.pool = (ids * (POOL_TOKENS // len(ids) + 1))[:POOL_TOKENS]
        self.answer = tokenizer.encode(" so \\boxed{Paris}", add_special_tokens=False)
        self.eos = tokenizer.eos_token_id
        self.logprobs = [-0.5] * (POOL_TOKENS + len(self.answer) + 1)

    def response(
        self, req: ModelRequest, n: int, final: bool, latency: float
    ) -> ModelResponse:
        """``n`` generated tokens (memory text, or text then the answer), then EOS.

        A turn that would not fit ``max_new_tokens`` is cut there and ends with
        stop reason ``length``, as SGLang does. Tokens carry version 0.
        """
        limit = req.gconfig.max_new_tokens
        tokens = self.pool[:n] + (self.answer if final else []) + [self.eos]
        stop = "stop"
        if len(tokens) > limit:
            tokens, stop = tokens[:limit], "length"
        k = len(tokens)
        return ModelResponse(
            input_tokens=req.input_ids,
            output_tokens=tokens,
            output_logprobs=self.logprobs[:k],
            output_versions=[0] * k,
            stop_reason=stop,
            latency=latency,
        )


class InstantEngine:
    """Answers every request at once with ``memory_tokens`` tokens of memory.

    Used to measure what the rollout driver itself costs: no sleeping, no
    queueing, no yielding to the event loop.
    """

    def __init__(self, tokenizer, memory_tokens: int = 512, final_budget: int = 512):
        self.out = _Outputs(tokenizer)
        self.memory_tokens = memory_tokens
        self.final_budget = final_budget
        self.requests = 0
        self._version = 0

    def get_version(self) -> int:
        return self._version

    def set_version(self, version: int) -> None:
        self._version = version

    async def agenerate(self, req: ModelRequest) -> ModelResponse:
        self.requests += 1
        final = req.gconfig.max_new_tokens == self.final_budget
        n = 16 if final else self.memory_tokens
        return self.out.response(req, n, final, latency=0.0)


@dataclass(frozen=True)
class CostModel:
    """Service time of one request: ``base + per_prompt * P + per_output * O``.

    GPU-like in shape (a fixed cost, a cheap prefill, a dominant decode) and
    about 35x faster than a real memory turn (~1 s), so that a run takes a
    minute. Only ratios are reported, so the scale cancels as long as the
    driver's CPU per request stays small against ``service time / slots``.
    """

    base_s: float = 6e-3
    per_prompt_token_s: float = 4e-6
    per_output_token_s: float = 60e-6

    def service_time(self, prompt_tokens: int, output_tokens: int) -> float:
        return (
            self.base_s
            + self.per_prompt_token_s * prompt_tokens
            + self.per_output_token_s * output_tokens
        )

    def scaled(self, factor: float) -> CostModel:
        """The same engine running ``factor`` times slower."""
        return CostModel(
            self.base_s * factor,
            self.per_prompt_token_s * factor,
            self.per_output_token_s * factor,
        )


@dataclass(frozen=True)
class OutputModel:
    """Log-normal output lengths (tokens, before the cut at max_new_tokens)."""

    memory_median: int = 250
    memory_sigma: float = 0.7
    final_median: int = 60
    final_sigma: float = 0.8

    def draw(self, rng: random.Random, final: bool) -> int:
        median, sigma = (
            (self.final_median, self.final_sigma)
            if final
            else (self.memory_median, self.memory_sigma)
        )
        return max(1, int(rng.lognormvariate(math.log(median), sigma)))


class SimEngine:
    """A simulated inference server with ``slots`` concurrent sequences.

    Each request waits for a free slot (FIFO, like a continuous-batching
    scheduler at its running-request limit), holds it for its service time and
    returns. Output lengths are drawn per episode from a generator seeded by the
    episode's first prompt and its index among episodes with that prompt, so
    every driver sees exactly the same work whatever the order of requests.
    Generated tokens carry the version the engine had when the turn was
    admitted to a slot. With ``sleep=False`` nothing waits: the engine only
    records the work (a dry run, to know a workload's service times upfront).
    """

    def __init__(
        self,
        tokenizer,
        slots: int,
        memory_budget: int,
        cost: CostModel = CostModel(),
        outputs: OutputModel = OutputModel(),
        seed: int = 0,
        sleep: bool = True,
    ):
        self.out = _Outputs(tokenizer)
        self.sleep = sleep
        self.slots = slots
        self.memory_budget = memory_budget
        self.cost = cost
        self.outputs = outputs
        self.seed = seed
        self._version = 0
        self.reset()

    def reset(self) -> None:
        """Forget all episodes and counters (between drivers)."""
        self._sem: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._episodes: dict[str, random.Random] = {}
        self._seen: dict[int, int] = {}
        self.work_s = 0.0  # nominal service time, summed
        self.busy_s = 0.0  # measured slot occupancy, summed
        self.wait_s = 0.0  # time spent waiting for a slot, summed
        self.requests = 0
        self.episodes_done = 0
        self.prompt_tokens = 0
        self.output_tokens = 0
        self.in_flight = 0
        self.services: dict[str, list[float]] = {}  # episode -> service time per turn
        self.loop_lags: list[float] = []
        self._monitor: asyncio.TimerHandle | None = None

    def get_version(self) -> int:
        return self._version

    def set_version(self, version: int) -> None:
        self._version = version

    def config(self) -> dict:
        return {
            "slots": self.slots,
            "cost": asdict(self.cost),
            "outputs": asdict(self.outputs),
        }

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._sem is None or self._loop is not loop:
            self._sem, self._loop = asyncio.Semaphore(self.slots), loop
        return self._sem

    @staticmethod
    def _episode(req: ModelRequest) -> str:
        """The request's episode: a group's episodes share one rid (one server's
        prefix cache), the workflow names each in the request's metadata."""
        return (req.metadata or {}).get("episode", req.rid)

    def _rng(self, req: ModelRequest) -> random.Random:
        rng = self._episodes.get(self._episode(req))
        if rng is None:
            key = zlib.crc32(np.asarray(req.input_ids, dtype=np.int32).tobytes())
            index = self._seen.get(key, 0)
            self._seen[key] = index + 1
            rng = random.Random(f"{self.seed}:{key}:{index}")
            self._episodes[self._episode(req)] = rng
        return rng

    def loop_stats(self) -> dict[str, float]:
        """How late a 1 ms heartbeat on the engine's event loop woke up."""
        lags = np.asarray(self.loop_lags or [0.0]) * 1e3
        return {
            "loop_lag_mean_ms": float(lags.mean()),
            "loop_lag_p99_ms": float(np.percentile(lags, 99)),
            "loop_lag_max_ms": float(lags.max()),
            "loop_stalled_s": float(lags[lags > 10].sum() / 1e3),
        }

    def _tick(self, due: float) -> None:
        """Samples event-loop lag while requests are in flight (a 1 ms timer).

        A timer rather than a task: a loop closed with requests in flight (an
        executor shut down mid-rollout) drops it silently.
        """
        if not self.in_flight:
            self._monitor = None
            return
        now = time.perf_counter()
        self.loop_lags.append(max(0.0, now - due))
        loop = asyncio.get_running_loop()
        self._monitor = loop.call_later(1e-3, self._tick, now + 1e-3)

    async def agenerate(self, req: ModelRequest) -> ModelResponse:
        self.in_flight += 1
        try:
            return await self._serve(req)
        finally:
            self.in_flight -= 1

    async def _serve(self, req: ModelRequest) -> ModelResponse:
        if self.sleep and self._monitor is None:
            loop = asyncio.get_running_loop()
            due = time.perf_counter() + 1e-3
            self._monitor = loop.call_later(1e-3, self._tick, due)
        final = req.gconfig.max_new_tokens != self.memory_budget
        rng = self._rng(req)
        n = self.outputs.draw(rng, final)
        resp = self.out.response(req, n, final, latency=0.0)
        service = self.cost.service_time(len(req.input_ids), len(resp.output_tokens))
        t_req = time.perf_counter()
        async with self._semaphore():
            t0 = time.perf_counter()
            resp.output_versions = [self._version] * len(resp.output_tokens)
            if self.sleep:
                await asyncio.sleep(service)
            t1 = time.perf_counter()
        resp.latency = t1 - t_req
        self.work_s += service
        self.services.setdefault(self._episode(req), []).append(service)
        self.busy_s += t1 - t0
        self.wait_s += t0 - t_req
        self.requests += 1
        self.prompt_tokens += len(req.input_ids)
        self.output_tokens += len(resp.output_tokens)
        if final:
            self.episodes_done += 1
            del self._episodes[self._episode(req)]
        return resp

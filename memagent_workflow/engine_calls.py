"""Model calls: refused when SGLang would refuse them, made again through an outage."""

from __future__ import annotations

import asyncio
import time

from areal.api import InferenceEngine, ModelRequest, ModelResponse
from areal.api.cli_args import GenerationHyperparameters
from areal.utils import logging

from memagent_workflow.context import check_turn
from memagent_workflow.episode import Episode

logger = logging.getLogger("MemAgentWorkflow")


def check_context_length(
    prompt_tokens: int, gconfig: GenerationHyperparameters
) -> None:
    """Refuse a turn SGLang would reject (``context.turn_fits``) before it is
    sent, rather than let the engine shorten or reject it."""
    check_turn(prompt_tokens, gconfig.max_new_tokens, gconfig.max_tokens)


async def agenerate_with_retry(
    engine: InferenceEngine, req: ModelRequest, retry_s: float, ep: Episode
) -> ModelResponse:
    """``engine.agenerate(req)``, made again until ``retry_s`` has passed.

    AReaL's client retries an HTTP call a few times, a second apart; a server
    that restarts, or answers errors for longer, would fail the episode and,
    with all its episodes, the group, after which AReaL pulls the next
    question at once. Waiting out the outage here loses nothing instead. Each
    call made again is counted in ``ep.retried_calls``.

    The project's one retry layer, for training and evaluation alike: an episode
    that fails anyway is not run again (training loses it; evaluation records
    the sample with its error, and a rerun of the eval retries it).
    """
    delay, deadline = min(0.5, retry_s / 8), None
    while True:
        try:
            return await engine.agenerate(req)
        except Exception as exc:
            now = time.monotonic()
            deadline = deadline or now + retry_s
            if now >= deadline:
                raise
            ep.retried_calls += 1
            logger.warning(f"model call failed ({exc!r:.300}); again in {delay:.1f}s")
            await asyncio.sleep(min(delay, deadline - now))
            delay = min(2 * delay, 8.0)

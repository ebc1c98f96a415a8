"""The workflow's per-group metrics, under its stat scope (rollout / eval-rollout)."""

from __future__ import annotations

import numpy as np
from areal import workflow_context
from areal.utils import stats_tracker

from memagent_workflow.episode import Document, Episode
from memagent_workflow.reward import extract_answer
from memagent_workflow.reward.squad import exact_match, f1, sub_em


def log_scalars(**stats: float) -> None:
    """``memagent/NAME`` scalars in the current workflow's stat scope."""
    tracker = stats_tracker.get(workflow_context.stat_scope())
    tracker.scalar(**{f"memagent/{k}": float(v) for k, v in stats.items()})


def log_group(
    doc: Document,
    episodes: list[Episode],
    rewards: list[float],
    failed: int,
    protocol: str = "boxed",
) -> None:
    """Reward, answer scores, memory use, latency and rows of one finished group;
    answers read as ``protocol`` reads them (``final_boxed``: one was found)."""
    n_calls = sum(e.memory_turns + 1 for e in episodes)
    memory_turns = sum(e.memory_turns for e in episodes)
    boxed = [extract_answer(e.answer, protocol) for e in episodes]
    preds = [b or "" for b in boxed]
    stats = {
        "reward": float(np.mean(rewards)),
        "n_chunks": len(doc.chunks),
        "context_tokens": doc.context_tokens,
        "truncated_context_tokens": doc.truncated_tokens,
        "final_boxed": np.mean([b is not None for b in boxed]),
        "sub_em": np.mean([sub_em(p, doc.answers) for p in preds]),
        "em": np.mean([exact_match(p, doc.answers) for p in preds]),
        "f1": np.mean([f1(p, doc.answers) for p in preds]),
        "turn_latency_s": sum(e.latency for e in episodes) / n_calls,
        "episodes_failed": failed,
        "item_rejected": 0.0,  # 1.0 where a malformed item was rejected
        "rows": sum(len(e.turns) for e in episodes),
    }
    versions = [e.oldest_version for e in episodes if e.oldest_version is not None]
    if versions:
        stats["oldest_version"] = min(versions)
    if memory_turns:
        stats["memory_tokens"] = sum(e.memory_tokens for e in episodes) / memory_turns
        stats["memory_hit_limit"] = (
            sum(e.memory_hit_limit for e in episodes) / memory_turns
        )
        stats["memory_empty"] = sum(e.memory_empty for e in episodes) / memory_turns
    log_scalars(**stats)

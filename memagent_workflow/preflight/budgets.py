"""Time budgets: one group's duration against ``rollout.request_timeout``, and a
rollout server's start (SGLang or vLLM) against ``rollout.setup_timeout``.

Under ``scheduler.type=local|ray`` AReaL's rollout controller waits for a whole
task with ``request_timeout`` (areal/infra/controller/rollout_controller.py,
"Rollout timed out"), and one task is one question's group: its episodes run
at once, each turn after turn. Without a scheduler (SPMD), the timeout bounds
one model call. A turn's duration is the user's (``--turn-seconds``) or
estimated: its new tokens at a per-request decode rate, times how many turns
wait for each one that runs in the server's KV cache (the memory check).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memagent_workflow.preflight.data import turn_budgets_of
from memagent_workflow.preflight.engine import engine_of
from memagent_workflow.preflight.memory_estimate import planned_turns, server_memory
from memagent_workflow.preflight.model import weights_local
from memagent_workflow.preflight.verdict import Check, fail, not_applicable, ok, warn

if TYPE_CHECKING:
    from memagent_workflow.preflight.run import Run

FAMILY = "time"
CHARS_PER_TOKEN = 4  # English text, for the chunk count of the longest row


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 120 else f"{seconds:.0f} s"


def turns_per_episode(run: Run) -> tuple[int | None, str]:
    """Memory turns plus the final turn, from max_chunks or the longest row."""
    m = run.config.memagent
    if m.max_chunks:
        return m.max_chunks + 1, f"max_chunks {m.max_chunks} + 1"
    if run.longest_context_chars:
        chunks = -(-run.longest_context_chars // (CHARS_PER_TOKEN * m.chunk_tokens))
        return chunks + 1, f"longest row ~{chunks} chunks + 1"
    return None, "no max_chunks and no rows read"


def turn_seconds(run: Run) -> tuple[float | None, str]:
    """One turn's duration under load, and how it was obtained: its new tokens
    at the decode rate, plus (measured) the prefill of the turns the server runs
    at once, times how many turns wait for each one that runs."""
    opts = run.options
    if opts.turn_seconds is not None:
        return opts.turn_seconds, f"{opts.turn_seconds:g} s/turn (--turn-seconds)"
    if not run.gpu_run and opts.measured is None:
        return None, "CPU run: give --turn-seconds (or --measured) to check"
    m, rates = run.config.memagent, run.rates
    new = max(m.max_memory_tokens, m.max_final_tokens)
    decode = rates.decode
    seconds = new / decode.value
    how = f"{new} tokens at {decode.value:g}/s" + decode.note
    queue, running = 1.0, planned_turns(run)
    shape = run.model[0]
    if run.gpu_run and shape is not None and not run.servers_running:
        est = server_memory(run, shape, run.gpu_memory_bytes[0])
        queue, running = est.queue_factor, min(est.planned_turns, est.turns_held)
    if rates.prefill.value is not None:
        prompt = turn_budgets_of(run)[0][0].prompt
        seconds += running * prompt / rates.prefill.value
        how += (
            f" + {running} turns x {prompt} prompt tokens at "
            f"{rates.prefill.value:g}/s prefill" + rates.prefill.note
        )
    if queue > 1:
        how += f" x{queue:.1f} queued"
    return seconds * queue, f"{seconds * queue:.0f} s/turn ({how})"


def check_request_timeout(run: Run) -> Check:
    name = "rollout.request_timeout"
    timeout = run.config.rollout.request_timeout
    per_turn, how = turn_seconds(run)
    if per_turn is None:
        return not_applicable(FAMILY, name, how)
    turns, turns_how = turns_per_episode(run)
    if run.scheduler is None:  # SPMD: one HTTP call per turn
        found, need = f"one call ~{_minutes(per_turn)}: {how}", per_turn
        scope = "one model call (SPMD)"
    elif turns is None:
        return warn(
            FAMILY,
            name,
            f"turns per episode unknown ({turns_how})",
            f"> one group's duration ({timeout:g} s now)",
            "set memagent.max_chunks or provide the data to bound the group",
        )
    else:
        episodes = 1 if run.is_eval else run.config.memagent.group_size
        need = turns * per_turn
        found = (
            f"one group ({episodes} episodes at once) ~{_minutes(need)}: "
            f"{turns} turns ({turns_how}) x {how}"
        )
        scope = "one group (AReaL times a whole task under a scheduler)"
    needed = f"{timeout:g} s > {scope}"
    if timeout <= need:
        return fail(
            FAMILY,
            name,
            found,
            needed,
            f"every task would time out and be rejected: raise rollout.request_timeout "
            f"above {2 * need:.0f} s (per-call failures are memagent.engine_retry_s's)",
        )
    if timeout < 2 * need:
        return warn(
            FAMILY, name, found, needed, "less than 2x headroom over the estimate"
        )
    return ok(FAMILY, name, found, needed)


def check_setup_timeout(run: Run) -> Check:
    name = "rollout.setup_timeout"
    engine = engine_of(run)
    if not run.gpu_run or run.servers_running:
        return not_applicable(
            FAMILY, name, f"no {engine.label} server started by this run"
        )
    timeout = run.config.rollout.setup_timeout
    path = run.config.actor.path
    shape = run.model[0]
    start = engine.start_s  # weights from local disk, compilation, CUDA graphs
    found = f"~{start} s to start {engine.label}"
    local = weights_local(path)
    if not local:
        if shape is None:
            return warn(
                FAMILY,
                name,
                f"{path} not cached, size unknown",
                f"{timeout:g} s > download + start",
                "download the model before the run (huggingface-cli download)",
            )
        size = shape.params * 2
        start += size / (run.options.download_mb_per_s * 1e6)
        found = (
            f"{path} not local: download {size / 1e9:.0f} GB at "
            f"{run.options.download_mb_per_s:g} MB/s + start = ~{start:.0f} s"
        )
    needed = f"{timeout:g} s, 2x the estimate"
    if 2 * start > timeout:
        return warn(
            FAMILY,
            name,
            found,
            needed,
            "download the model on every node first, or raise rollout.setup_timeout",
        )
    return ok(FAMILY, name, found, needed)

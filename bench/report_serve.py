"""The service section of ``results.md`` (benchmark 9, ``bench/serve.py``)."""

from __future__ import annotations

from typing import Any

from bench.report_loop import table
from bench.report_sections import targets


def serve(r: dict[str, Any]) -> list[str]:
    c, svc, local = r["config"], r["service"], r["in_process"]
    out = [
        "`examples/serve.py` (as `python -m standin.serve`, "
        f"`{c['config']}`) answering held-out needle documents of {c['chunks']} "
        f"chunks ({c['chunks'] + 1} turns each, greedy) through OpenAI's chat API, "
        "against one stand-in server on the warm-started needle model, beside the "
        "same episodes run as `ask.py` runs its one in process (`engine.submit` / "
        "`wait` on the eval's engine, the eval's concurrency), on the same server. "
        "Each level sends twice as many requests as it keeps in flight (at least 16), "
        f"{c['repeats']} times, the two ways alternating; the fastest repeat of each counts. "
        "The service's cost per turn is its wall time per turn less the in-process "
        "loop's: HTTP, JSON, the document's encoding per request, admission, the log "
        "line. The stand-in's own time per turn is most of both.",
        "",
        *targets(r),
    ]
    rows = []
    for level in map(str, c["concurrency"]):
        s, p = svc[level], local[level]
        rows.append(
            f"{level}|{s['requests']}|{s['requests_per_s']:.1f}|{s['turns_per_s']:.0f}"
            f"|{s['ms_per_turn']:.2f}|{p['turns_per_s']:.0f}|{p['ms_per_turn']:.2f}"
            f"|{s['ms_per_turn'] - p['ms_per_turn']:.2f}"
        )
    return out + table(
        "concurrent requests|requests|service: requests/s|turns/s|ms / turn"
        "|in process: turns/s|ms / turn|service's cost, ms / turn",
        rows,
    )

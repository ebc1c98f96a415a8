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


def faults(r: dict[str, Any]) -> list[str]:
    c, soak = r["config"], r["soak"]
    out = [
        "`python -m standin.serve` as docs/serve.md's CPU command runs it (its own "
        "stand-in server on the warm-started needle model, the default `serve.*` "
        f"deadlines), {c['clients']} concurrent clients per phase (half streamed, "
        "needle documents of 16 chunks, greedy): the server healthy, hung (SIGSTOP), "
        "killed (SIGKILL), and once the service has started it again. Answered right: "
        "the needle's answer (the warm-started model is not trained for the task); "
        "as when healthy: the healthy phase's answer to the same request. A client that gets "
        f"nothing within {c['client_timeout_s']} s is left hanging. Memory: the "
        "service's RSS; files: its open descriptors.",
        "",
        *targets(r),
    ]
    rows = [
        f"{name}|{p['answered']}|{p['right']}|{p['as_before']}|"
        + (", ".join(f"{k}: {v}" for k, v in sorted(p["errors"].items())) or "-")
        + f"|{p['longest_to_error_s']:.1f}|{p['hanging']}"
        f"|{p['before']['rss_mb']:.0f} / {p['after']['rss_mb']:.0f}"
        f"|{p['before']['fds']} / {p['after']['fds']}"
        for name, p in r["phases"].items()
    ]
    out += table(
        "phase|answered|answered right|as when healthy|errors (status code: clients)"
        "|longest to an error, s|hanging|memory MB before / after|open files before / after",
        rows,
    )
    samples = soak["samples"]
    out += [
        "",
        f"Soak: {soak['rate_per_s']:g} requests/s for {soak['seconds']:.0f} s, "
        f"{soak['requests']} requests, {soak['answered']} answered, {soak['right']} right; "
        "the service's memory (MB) and open files every 30 s: "
        + ", ".join(f"{s['rss_mb']:.0f}/{s['fds']}" for s in samples)
        + ".",
    ]
    return out

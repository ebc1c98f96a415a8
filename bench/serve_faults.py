"""Benchmark 11: the service under faults and load.

``python -m standin.serve`` as docs/serve.md's CPU command runs it (it launches
its own stand-in server on the warm-started needle model), then 64 concurrent
clients, half streamed, each phase: the server healthy, hung (SIGSTOP), killed
(SIGKILL), and once the service has started it again. Per phase: requests
answered, answered right (the needle's answer; the warm-started model is not
trained for it), answers equal to the healthy phase's (greedy: the same
requests), errors by status and code, the
longest time to an error, clients left hanging (no reply within 120 s), the
service's memory and open files before and after. Then a soak: a steady
request rate for 10 minutes, the service's memory and open files sampled.

    uv run python bench/run.py --only serve_faults
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil

from bench.learning import REPO, build_model
from bench.serve import documents, request_body

CLIENTS = 64
CLIENT_TIMEOUT_S = 120
SOAK_S, SOAK_RATE = 600, 2.0  # requests per second
READY = re.compile(r"MemAgent service at (http://\S+)/v1 ")


def start(model: Path, root: Path) -> tuple[psutil.Popen, str]:
    cmd = [
        sys.executable, "-m", "standin.serve", "--config", "config_eval_needle.yaml",
        f"actor.path={model}", f"eval.output_dir={root / 'out'}",
        f"cluster.fileroot={root / 'areal'}",
        f"cluster.name_resolve.nfs_record_root={root / 'nr'}", "--port", "0",
    ]  # fmt: skip
    log = root / "serve.log"
    proc = psutil.Popen(cmd, cwd=REPO, stdout=log.open("w"), stderr=-2)
    for _ in range(600):
        if found := READY.search(log.read_text(errors="replace")):
            return proc, found.group(1)
        time.sleep(0.5)
    raise RuntimeError(f"the service did not start: {log}")


def call(url: str, row: dict[str, Any], stream: bool) -> dict[str, Any]:
    """One client: its status, code, answer and seconds."""
    body = json.loads(request_body(row))
    body["stream"] = stream
    req = urllib.request.Request(
        f"{url}/v1/chat/completions", json.dumps(body).encode(),
        {"Content-Type": "application/json"},
    )  # fmt: skip
    start = time.monotonic()
    out: dict[str, Any] = {"status": 0, "code": None, "answer": None}
    try:
        with urllib.request.urlopen(req, timeout=CLIENT_TIMEOUT_S) as reply:
            out["status"] = reply.status
            text = reply.read().decode()
        if stream:
            events = [
                json.loads(x[6:]) for x in text.splitlines() if x.startswith("data: {")
            ]
            errors = [e["error"] for e in events if "error" in e]
            if errors:  # after the 200: an error event ends the stream
                out["code"] = f"error event {errors[0]['code']}"
            final = [
                e for e in events if e.get("memagent", {}).get("extracted") is not None
            ]
            out["answer"] = final[-1]["memagent"]["extracted"] if final else None
        else:
            out["answer"] = json.loads(text)["memagent"]["extracted"]
    except urllib.error.HTTPError as err:
        out["status"], out["code"] = err.code, json.loads(err.read())["error"]["code"]
    except (TimeoutError, OSError) as exc:
        out["code"] = f"hanging: {type(exc).__name__}"
    out["seconds"] = time.monotonic() - start
    out["right"] = out["answer"] is not None and out["answer"] in row["answers"]
    return out


def usage(proc: psutil.Process) -> dict[str, float]:
    return {"rss_mb": proc.memory_info().rss / 2**20, "fds": proc.num_fds()}


def server(proc: psutil.Process) -> psutil.Process:
    return next(
        p
        for p in proc.children(recursive=True)
        if "standin.server" in " ".join(p.cmdline())
    )


def health(url: str) -> int:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0


def phase(proc, url, rows, fault=None, alone=None) -> dict[str, Any]:
    """64 clients (odd ones streamed) over ``rows``, ``fault`` done to the
    server first; ``alone``: the healthy phase, whose greedy answers the same
    requests must get again."""
    before = usage(proc)
    if fault is not None:
        fault(server(proc))
    with ThreadPoolExecutor(CLIENTS) as pool:
        got = list(pool.map(lambda i: call(url, rows[i], i % 2 == 1), range(CLIENTS)))
    errors: dict[str, int] = {}
    for g in got:
        if g["status"] != 200 or g["code"]:
            key = f"{g['status']} {g['code']}"
            errors[key] = errors.get(key, 0) + 1
    failed = [g["seconds"] for g in got if g["status"] != 200 or g["code"]]
    deadline = time.monotonic() + 180
    while health(url) != 200 and time.monotonic() < deadline:  # restarted meanwhile
        time.sleep(1)
    reference = alone["answers"] if alone else [g["answer"] for g in got]
    return {
        "clients": CLIENTS,
        "answers": [g["answer"] for g in got],
        "as_before": sum(
            g["answer"] is not None and g["answer"] == a
            for g, a in zip(got, reference, strict=True)
        ),
        "answered": sum(g["status"] == 200 and not g["code"] for g in got),
        "right": sum(g["right"] for g in got),
        "errors": errors,
        "longest_to_error_s": max(failed, default=0.0),
        "hanging": sum(str(g["code"]).startswith("hanging") for g in got),
        "before": before,
        "after": usage(proc),
    }


def soak(proc, url, rows, seconds: float) -> dict[str, Any]:
    samples, results = [], []
    start = time.monotonic()
    with ThreadPoolExecutor(32) as pool:
        futures, i = [], 0
        while (now := time.monotonic() - start) < seconds:
            futures.append(pool.submit(call, url, rows[i % len(rows)], i % 2 == 1))
            i += 1
            if not samples or now - samples[-1]["t"] >= 30:
                samples.append({"t": now, **usage(proc)})
            time.sleep(1 / SOAK_RATE)
        results = [f.result() for f in futures]
    samples.append({"t": time.monotonic() - start, **usage(proc)})
    return {
        "seconds": seconds,
        "rate_per_s": SOAK_RATE,
        "requests": len(results),
        "answered": sum(r["status"] == 200 and not r["code"] for r in results),
        "right": sum(r["right"] for r in results),
        "samples": samples,
    }


def run(smoke: bool = False) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="bench_serve_faults_"))
    model = build_model(REPO / "bench" / ".cache" / "needle_model", seed=0)
    rows = documents(CLIENTS)
    proc, url = start(model, root)
    try:
        call(url, rows[0], False)  # warm
        healthy = phase(proc, url, rows)
        phases = {
            "healthy": healthy,
            "hung": phase(proc, url, rows, lambda s: s.suspend(), healthy),
            "killed": phase(proc, url, rows, lambda s: s.kill(), healthy),
            "restarted": phase(proc, url, rows, None, healthy),
        }
        soaked = soak(proc, url, rows, 20 if smoke else SOAK_S)
    finally:
        proc.terminate()
        proc.wait(60)
    first, last = soaked["samples"][1], soaked["samples"][-1]  # after the warm-up
    return {
        "config": {"clients": CLIENTS, "client_timeout_s": CLIENT_TIMEOUT_S},
        "phases": phases,
        "soak": soaked,
        "targets": [
            {
                "metric": "clients left hanging (all phases)",
                "measured": sum(p["hanging"] for p in phases.values()),
                "target": 0,
                "pass": sum(p["hanging"] for p in phases.values()) == 0,
            },
            {
                "metric": "longest time to an error (s)",
                "measured": round(
                    max(p["longest_to_error_s"] for p in phases.values()), 1
                ),
                "target": "< 60 (serve.call_timeout_s)",
                "pass": max(p["longest_to_error_s"] for p in phases.values()) < 60,
            },
            {
                "metric": "once restarted: answers equal to the healthy phase's",
                "measured": phases["restarted"]["as_before"],
                "target": CLIENTS,
                "pass": phases["restarted"]["as_before"] == CLIENTS,
            },
            {
                "metric": "soak: memory growth (MB)",
                "measured": round(last["rss_mb"] - first["rss_mb"], 1),
                "target": "reported",
                "pass": None,
            },
            {
                "metric": "soak: open files growth",
                "measured": last["fds"] - first["fds"],
                "target": "<= 0",
                "pass": last["fds"] - first["fds"] <= 0,
            },
        ],  # fmt: skip
    }

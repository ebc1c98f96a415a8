"""Write ``results.md`` from the benchmarks' JSON files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FILES = ("overhead", "async_vs_lockstep", "scaling")
TITLES = {
    "overhead": "1. Driver overhead per turn",
    "async_vs_lockstep": "2. Async (AReaL) vs lockstep rollout",
    "scaling": "3. Scaling in context length",
}


def _load(out_dir: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for name in FILES:
        path = out_dir / f"{name}.json"
        if path.exists():
            found[name] = json.loads(path.read_text())
    return found


def _status(t: dict[str, Any]) -> str:
    return {True: "**PASS**", False: "**MISS**", None: "info"}[t["pass"]]


def _ratio(t: dict[str, Any]) -> str:
    r = t["ratio"]
    return f"{r:.4f}" if "R²" in t["target"] else f"{r:.2f}"


def _table(header: str, rows: list[str]) -> list[str]:
    """A Markdown table from ``|``-separated header and row strings."""
    cells = [r.split("|") for r in [header, *rows]]
    lines = ["| " + " | ".join(c) + " |" for c in cells]
    return [lines[0], "|" + "---|" * len(cells[0]), *lines[1:], ""]


def _targets(res: dict[str, Any]) -> list[str]:
    rows = [
        f"{t['metric']}|{t['measured']}|{t['target']}|{_ratio(t)}|{_status(t)}"
        for t in res["targets"]
    ]
    return _table("metric|measured|target|ratio|status", rows)


def _overhead(r: dict[str, Any]) -> list[str]:
    c, tok, b = r["config"], r["tokenisation"], r["breakdown_us"]
    ev, tr = r["eval_turn"], r["train_turn"]
    out = [
        f"`MemAgentWorkflow` against an engine that answers at once "
        f"(`bench/engines.py: InstantEngine`, {c['memory_tokens_per_turn']}-token "
        f"memory per turn), the {c['vocab_size']:,}-token BPE trained locally "
        f"(`bench/vocab.py`), {c['chunk_tokens']}-token chunks, a "
        f"{tok['tokens']:,}-token document. CPU time is the process's, median of "
        f"{c['repeats']} runs; the document is tokenised once beforehand and timed apart.",
        "",
        *_targets(r),
    ]
    out += _table(
        "document|piecewise encode (`read_document`)|tokens/s|one whole-string encode|tokens/s",
        [
            f"{tok['tokens']:,} tokens, {tok['chunks']} chunks|{tok['piecewise_wall_s']:.2f} s"
            f"|{tok['tokens_per_s'] / 1e6:.2f} M|{tok['whole_string_wall_s']:.2f} s"
            f"|{tok['whole_string_tokens_per_s'] / 1e6:.2f} M"
        ],
    )
    out += _table(
        "mode|turns|CPU ms / turn|wall ms / turn",
        [
            f"eval, `keep_turns=False`|{ev['turns']}|{ev['cpu_ms_per_turn']:.3f}|{ev['wall_ms_per_turn']:.3f}",
            f"training (`arun_episode`), group of {tr['group_size']}, rewards and rows"
            f"|{tr['turns']}|{tr['cpu_ms_per_turn']:.3f}|{tr['wall_ms_per_turn']:.3f}",
        ],
    )
    out += [
        f"One memory turn piece by piece ({b['prompt_tokens']:,}-token prompt, µs):",
        "",
    ]
    out += _table(
        "`PromptTemplate.build` (arrays)|prompt ids for the request (`tolist`)|`Turn.from_response`|`ModelRequest`|instant engine",
        [
            f"{b['prompt_build_us']:.0f}|{b['prompt_to_request_ids_us']:.0f}"
            f"|{b['turn_from_response_us']:.0f}|{b['model_request_us']:.1f}|{b['instant_engine_us']:.1f}"
        ],
    )
    return out


def _async(r: dict[str, Any]) -> list[str]:
    c, a, lk = r["config"], r["async"], r["lockstep"]
    ideal, zero = r["ideal"], r["zero_driver_cost"]
    cost, outs, counts = c["cost"], c["outputs"], c["chunk_counts_actual"]
    n_ep = lk["episodes"]
    out = [
        f"{c['questions']} questions x group of {c['group_size']} = {n_ep} episodes; "
        f"{c['chunk_tokens']}-token chunks, chunk counts {min(counts)} to {max(counts)} "
        f"(buckets {', '.join(map(str, c['chunk_counts']))}), {lk['requests']:,} model calls. "
        f"Simulated engine (`bench/engines.py: SimEngine`): {c['slots']} slots served first come, "
        f"first served; service time {cost['base_s'] * 1e3:g} ms + {cost['per_prompt_token_s'] * 1e6:g} µs "
        f"per prompt token + {cost['per_output_token_s'] * 1e6:g} µs per output token (~35x faster than "
        f"a GPU turn); memory outputs log-normal (median {outs['memory_median']} tokens, σ "
        f"{outs['memory_sigma']}, cut at {c['memory_budget']}), answers median {outs['final_median']}. "
        f"Output lengths are drawn per episode, so both drivers get identical work (same total "
        f"service time: {r['same_work']}). Async: AReaL's `WorkflowExecutor.rollout_batch`, "
        f"`max_concurrent_rollouts={c['concurrency']}`. Lockstep: batches of {c['concurrency']} "
        "questions; one turn of every active episode at a time, then wait for all.",
        "",
        *_targets(r),
    ]

    def row(name: str, wall: float, res: dict[str, Any] | None = None) -> str:
        eps = n_ep / wall
        cells = f"{name}|{wall:.1f}|{eps:.2f}|{eps / lk['episodes_per_s']:.2f}x|{eps / ideal['episodes_per_s']:.0%}"
        if res is None:
            return cells + "|||"
        return (
            cells
            + f"|{res['slot_utilisation']:.0%}|{res['loop_lag_max_ms']:.0f}|{res['cpu_s']:.1f}"
        )

    out += _table(
        "driver|wall s|episodes/s|vs lockstep|vs ideal|slots busy|max loop lag ms|CPU s",
        [
            row("**async** (AReaL `WorkflowExecutor`)", a["wall_s"], a),
            row("**lockstep** (batch by turn)", lk["wall_s"], lk),
            row("async schedule, zero driver cost", zero["async_s"]),
            row("lockstep schedule, zero driver cost", zero["lockstep_s"]),
            row("engine-bound ideal (work / slots)", ideal["wall_s"]),
        ],
    )
    out += [
        f"Checks: the drivers completed {a['episodes']} and {lk['episodes']} episodes, "
        f"{a['rows']:,} and {lk['rows']:,} training rows; {lk['lockstep_violations']} lockstep "
        f"turns started before the previous step had ended ({lk['steps']:,} steps). "
        f"Lockstep spent {lk['read_s']:.1f} s tokenising at batch starts. The zero-cost rows "
        "replay the same per-turn service times through each policy (`bench/schedule.py`).",
        "",
    ]
    return out


def _scaling(r: dict[str, Any]) -> list[str]:
    fit, fit_t = r["fit_total"], r["fit_turns"]
    out = [
        f"One eval episode (`keep_turns=False`, {r['config']['chunk_tokens']}-token chunks) per "
        "length, each in a fresh subprocess, against the instant engine; documents are "
        "`Document i:\\nTitle\\nparagraph` blocks of synthetic prose. Times are the best of the "
        "repeats; tokenisation runs on both cores when the machine leaves it the second one "
        "(CPU s above wall s). Peak RSS is the kernel's high-water mark over the episode "
        "(reset after the document is built), minus the document text.",
        "",
        *_targets(r),
    ]
    out += _table(
        "tokens|chunks|tokenise s|tokenise CPU s|turns s|total s|tokens/s|ms / turn|peak RSS − text MB"
        "|episode growth MB|RSS drift over turns MB|traced B / turn",
        [
            f"{x['tokens']:,}|{x['chunks']}|{x['tokenise_s']:.3f}|{x['tokenise_cpu_s']:.3f}|{x['turns_s']:.3f}|{x['total_s']:.3f}"
            f"|{x['tokens_per_s'] / 1e6:.2f} M|{x['ms_per_turn']:.2f}|{x['peak_rss_minus_text_mb']:.0f}"
            f"|{x['episode_growth_mb']:.0f}|{x['turn_rss_last_mb'] - x['turn_rss_first_mb']:+.2f}"
            f"|{x['traced_bytes_per_turn']:+.0f}"
            for x in r["lengths"]
        ],
    )
    out += [
        f"Linear fit of total time: {fit['intercept_s']:+.3f} s + {fit['slope_s_per_mtok']:.3f} s "
        f"per M tokens (R² {fit['r2']:.5f}); turns alone: {fit_t['slope_s_per_mtok']:.3f} s per M "
        f"tokens (R² {fit_t['r2']:.5f}). *Episode growth* is the peak over the RSS before the "
        "episode: the int32 ids (4 B/token) and tokenisation transients, linear in the context and "
        "freed after it. *RSS drift over turns* and *traced B / turn* (tracemalloc over a second "
        "pass, from the second turn to the answer) show what the turns themselves keep: nothing "
        "beyond the current memory (negative: the answer's prompt, alive at the last sample, "
        "is shorter than a memory turn's).",
        "",
    ]
    return out


RENDER = {"overhead": _overhead, "async_vs_lockstep": _async, "scaling": _scaling}


def _machine(results: dict[str, dict[str, Any]]) -> list[str]:
    m = next(iter(results.values()))["machine"]
    loads = ", ".join(
        f"{n}: {r['loadavg_before'][0]:.1f}"
        for n, r in results.items()
        if "loadavg_before" in r
    )
    return [
        f"Measured {m['date']} on {m['cpu']} ({m['cpu_cores']} cores), {m['platform']}; "
        f"Python {m['python']}, torch {m['torch']}, transformers {m['transformers']}, "
        f"tokenizers {m['tokenizers']}, areal {m['areal']}. 1-minute load average when each "
        f"benchmark started ({loads}): the machine may be shared, so times are best-of or median "
        "of repeats, and ratios are taken within one run.",
        "",
    ]


def _summary(results: dict[str, dict[str, Any]]) -> list[str]:
    rows = [
        f"{TITLES[name].split('. ', 1)[1]}|{t['metric']}|{t['measured']}|{t['target']}"
        f"|{_ratio(t)}|{_status(t)}"
        for name, res in results.items()
        for t in res["targets"]
    ]
    return _table("benchmark|metric|measured|target|ratio|status", rows)


def render(results: dict[str, dict[str, Any]], notes: str = "") -> str:
    smoke = any(r.get("smoke") for r in results.values())
    lines = [
        "# Benchmarks: driver overhead, async vs lockstep, O(N) in context length",
        "",
    ]
    if smoke:
        lines += [
            "> **Smoke run at toy sizes: the numbers say nothing about the targets.**",
            "",
        ]
    lines += [
        "Reproduce with `uv run python bench/run.py` (all three, about 6 minutes on 2 cores; "
        "`--only overhead|async|scaling` for one, `--smoke` for toy sizes). Raw numbers: "
        "`bench/results/*.json`.",
        "",
    ]
    if not results:
        return "\n".join(lines + ["No results yet.", ""])
    lines += _machine(results) + ["## Summary", ""] + _summary(results)
    for name in FILES:
        lines += [f"## {TITLES[name]}", ""]
        lines += RENDER[name](results[name]) if name in results else ["Not run.", ""]
    misses = [
        t["metric"]
        for r in results.values()
        for t in r["targets"]
        if t["pass"] is False
    ]
    lines += ["## Closing note", ""]
    lines += [
        f"Missed: {'; '.join(misses)}."
        if misses
        else "Every target is met in this run.",
        "",
    ]
    if notes:
        lines += [notes.strip(), ""]
    return "\n".join(lines)


def write_report(out_dir: Path, md_path: Path) -> Path:
    """Render the JSON files found in ``out_dir`` (plus the notes) to ``md_path``."""
    notes_path = Path(__file__).with_name("NOTES.md")
    notes = notes_path.read_text() if notes_path.exists() else ""
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text(render(_load(out_dir), notes))
    return md_path

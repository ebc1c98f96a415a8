"""``results.md`` sections of benchmarks 1, 2, 5 and 6 (driver, rollout, scaling, learning)."""

from __future__ import annotations

from typing import Any

from bench.report_loop import table as _table


def status_cell(t: dict[str, Any]) -> str:
    return {True: "**PASS**", False: "**MISS**", None: "info"}[t["pass"]]


def ratio_cell(t: dict[str, Any]) -> str:
    r = t.get("ratio")
    if r is None:  # a count or a growth: no ratio to a target
        return "-"
    return f"{r:.4f}" if "R²" in t["target"] else f"{r:.2f}"


def targets(res: dict[str, Any]) -> list[str]:
    rows = [
        f"{t['metric']}|{t['measured']}|{t['target']}|{ratio_cell(t)}|{status_cell(t)}"
        for t in res["targets"]
    ]
    return _table("metric|measured|target|ratio|status", rows)


def overhead(r: dict[str, Any]) -> list[str]:
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
        *targets(r),
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


def rollout(r: dict[str, Any]) -> list[str]:
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
        "questions; one turn of every active episode at a time, then wait for all. This "
        "small batch is **not the original's shape**: the original puts a step's whole batch "
        "in flight (benchmarks 3 and 4); the zero-cost rows below include that shape.",
        "",
        *targets(r),
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
            row(
                f"**lockstep, small batch** ({c['concurrency']} questions at a time)",
                lk["wall_s"],
                lk,
            ),
            row("async schedule, zero driver cost", zero["async_s"]),
            row("lockstep schedule, zero driver cost", zero["lockstep_s"]),
            row(
                f"async schedule, all {c['questions']} questions in flight, zero driver cost",
                zero["async_whole_batch_s"],
            ),
            row(
                f"lockstep schedule, all {c['questions']} questions as one batch (the "
                "original's shape), zero driver cost",
                zero["lockstep_whole_batch_s"],
            ),
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


def scaling(r: dict[str, Any]) -> list[str]:
    fit_c, fit, fit_t = r["fit_cpu"], r["fit_total"], r["fit_turns"]
    per_child = r["config"].get("lengths_per_subprocess", 1)
    where = "each in a fresh subprocess" if per_child == 1 else "in one subprocess"
    out = [
        f"One eval episode (`keep_turns=False`, {r['config']['chunk_tokens']}-token chunks) per "
        f"length, {where}, against the instant engine; documents are "
        "`Document i:\\nTitle\\nparagraph` blocks of synthetic prose. Times are the best of the "
        "repeats. Linearity is judged on CPU time (the process's own, all its threads: "
        "tokenisation runs on both cores when the machine leaves it the second one, so CPU s "
        "can exceed wall s), which other work on a shared machine barely moves; wall time is "
        "fitted beside it, with the machine's load during each length (1-minute load average "
        "before; whole-machine CPU use over the length, all cores). Peak RSS is the kernel's "
        "high-water mark over the episode (reset after the document is built), minus the "
        "document text.",
        "",
        *targets(r),
    ]
    out += _table(
        "tokens|chunks|tokenise CPU s|turns CPU s|total CPU s|total wall s|tokens/s (wall)"
        "|ms / turn|load avg|machine busy|peak RSS − text MB|episode growth MB"
        "|RSS drift over turns MB|traced B / turn",
        [
            f"{x['tokens']:,}|{x['chunks']}|{x['tokenise_cpu_s']:.3f}|{x['turns_cpu_s']:.3f}"
            f"|{x['total_cpu_s']:.3f}|{x['total_s']:.3f}|{x['tokens_per_s'] / 1e6:.2f} M"
            f"|{x['ms_per_turn']:.2f}|{x['loadavg_before']:.1f}|{x['machine_busy']:.0%}"
            f"|{x['peak_rss_minus_text_mb']:.0f}|{x['episode_growth_mb']:.0f}"
            f"|{x['turn_rss_last_mb'] - x['turn_rss_first_mb']:+.2f}"
            f"|{x['traced_bytes_per_turn']:+.0f}"
            for x in r["lengths"]
        ],
    )
    out += [
        f"Linear fit of CPU time: {fit_c['intercept_s']:+.3f} s + {fit_c['slope_s_per_mtok']:.3f} s "
        f"per M tokens (R² {fit_c['r2']:.5f}); of wall time: {fit['intercept_s']:+.3f} s + "
        f"{fit['slope_s_per_mtok']:.3f} s per M tokens (R² {fit['r2']:.5f}); turns alone: "
        f"{fit_t['slope_s_per_mtok']:.3f} CPU s per M tokens (R² {fit_t['r2']:.5f}). *Episode "
        "growth* is the peak over the RSS before the episode: the int32 ids (4 B/token) and "
        "tokenisation transients, linear in the context and freed after it. *RSS drift over "
        "turns* and *traced B / turn* (tracemalloc over a second pass, from the second turn to "
        "the answer) show what the turns themselves keep: nothing beyond the current memory "
        "(negative: the answer's prompt, alive at the last sample, is shorter than a memory "
        "turn's).",
        "",
    ]
    return out


def learning(r: dict[str, Any]) -> list[str]:
    c = r["config"]

    def cell(value: Any, fmt: str = "{}") -> str:
        return "never" if value is None else fmt.format(value)

    rows = [
        f"{s['run']}|{s['seed']}|{s['first_eval']:.3f}|{s['final_eval']:.3f}"
        f"|{s['best_eval']:.3f}|{cell(s['step_to_0.5'])} / {cell(s['step_to_0.9'])}"
        f"|{cell(s['seconds_to_0.5'], '{:.0f}')} / {cell(s['seconds_to_0.9'], '{:.0f}')}"
        f"|{s['wall_s']:.0f}"
        for s in r["runs"]
    ]
    return [
        f"The CPU main job (`{c['file']}`: AReaL's single controller, `RemoteSGLangEngine`"
        f", the FSDP actor, a disk weight update every step) on the needle task: "
        f"{c['total_train_steps']} steps of {c['questions_per_step']} questions x "
        f"{c['group_size']} episodes, lr {c['lr']:g}; held-out accuracy on "
        f"{c['valid_questions']} questions whose (name, code) pairs are never trained "
        f"on, one sampled episode each, every 5 steps; chance {c['chance']:.2f}. "
        f"Controls on seed 0's model: `shuffled` gives each memory row another "
        f"episode's advantage (`bench/controls.py`), `no_memory_rows` trains the final "
        f"turn only (`memagent.train_memory_turns=false`). {c['parallel_runs']} runs at "
        f"a time, so seconds include sharing the 2 cores; total {r['total_wall_s'] / 60:.1f} min.",
        "",
        *targets(r),
        *_table(
            "run|seed|held-out acc. first eval|final|best|step to 0.5 / 0.9"
            "|seconds of training to 0.5 / 0.9|wall s (start-up included)",
            rows,
        ),
        f"![learning curves]({r['png'].removeprefix('bench/')})",
        "",
    ]


def length(r: dict[str, Any]) -> list[str]:
    c = r["config"]
    chunks = c["lengths"]
    rows = [
        f"seed {run['seed']}: {label.replace('_', ' ')}|"
        + "|".join("-" if v is None else f"{v:.2f}" for v in run["table"][label])
        for run in r["runs"]
        for label in ("trained", "warm_start", "memory_wiped", "ms_per_turn")
        if label in run["table"]
    ]
    walls = ", ".join(
        f"seed {run['seed']}: {run['wall_s'] / 60:.1f} min ({run['train_s']:.0f} s training)"
        for run in r["runs"]
    )
    return [
        f"The CPU main job (`{c['file']}` as it is) trained at "
        f"{c['train_chunks']} chunks, then its own length eval through "
        f"`examples/eval.py` on {c['eval_questions']} held-out questions per length: "
        f"the trained checkpoint, the warm start (the same model before RL) and the "
        f"trained checkpoint with `memagent.wipe_memory=true` (every turn given the "
        f"initial memory). Accuracy (sub-EM, one sampled episode per question); "
        f"chance {c['chance']:.2f}. `ms per turn`: the trained row's eval wall time "
        f"at N chunks over its questions x (N + 1) turns (N memory turns and the "
        f"answer; questions run concurrently). Wall time per run (training, then 3 "
        f"eval rows): "
        f"{walls}; total {r['total_wall_s'] / 60:.1f} min.",
        "",
        *targets(r),
        *_table("row|" + "|".join(f"{n} chunks" for n in chunks), rows),
        f"![accuracy per length]({r['png'].removeprefix('bench/')})",
        "",
    ]

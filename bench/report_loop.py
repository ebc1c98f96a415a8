"""``results.md`` sections of the schedule replay and the loop benchmark."""

from __future__ import annotations

import statistics
from typing import Any

from bench.loop_config import ORIGINAL, label

TOLERANCE = 0.10  # two runs of the loop benchmark agree within this


def table(header: str, rows: list[str]) -> list[str]:
    """A Markdown table from ``|``-separated header and row strings."""
    cells = [r.split("|") for r in [header, *rows]]
    lines = ["| " + " | ".join(c) + " |" for c in cells]
    return [lines[0], "|" + "---|" * len(cells[0]), *lines[1:], ""]


def engine_model(cost: dict[str, float], outs: dict[str, float], c: dict) -> str:
    return (
        f"service time {cost['base_s'] * 1e3:g} ms + {cost['per_prompt_token_s'] * 1e6:g} µs "
        f"per prompt token + {cost['per_output_token_s'] * 1e6:g} µs per output token; "
        f"memory outputs log-normal (median {outs['memory_median']} tokens, σ "
        f"{outs['memory_sigma']}, cut at {c['memory_budget']}), answers median "
        f"{outs['final_median']}; {c['chunk_tokens']}-token chunks"
    )


def replay(r: dict[str, Any]) -> list[str]:
    c = r["config"]
    ps = c["prompt_sizes"]
    out = [
        f"One training step's rollout as the original runs it: {c['questions']} questions x "
        f"{c['group_size']} episodes = {c['questions'] * c['group_size']:,} episodes "
        "(config.yaml's `train_dataset.batch_size` and `memagent.group_size`). Service "
        "times are drawn from the simulated engine's models ("
        + engine_model(c["cost"], c["outputs"], c)
        + f"; the workflow's templates add {ps['memory_turn']} prompt tokens to a memory turn) "
        "and replayed at zero driver cost (`bench/schedule.py`; benchmark 2 compares such "
        f"replays with measured runs). Mean of {len(c['seeds'])} draws; the range of the "
        "ratio over the draws in brackets. *Async* is AReaL's executor with "
        f"`max_concurrent_rollouts: {c['concurrency']}` groups (config.yaml); *small "
        "batch* is benchmark 2's lockstep shape (slots / group questions at a time); "
        "*whole batch* is the original's (every episode of the step in flight, one turn per "
        "episode per step). Times are one batch's rollout, in simulated seconds.",
        "",
        *_targets_table(r),
    ]
    out += table(
        "mix|slots|async s|lockstep, whole batch (original) s|lockstep, small batch s"
        "|engine-bound ideal s|whole batch / async|small batch / async",
        [
            f"{x['mix']}|{x['slots']:,}|{x['async_s']:.2f}|{x['lockstep_whole_batch_s']:.2f}"
            f"|{x['lockstep_small_batch_s']:.2f} ({x['small_batch_questions']} q)"
            f"|{x['ideal_s']:.2f}|**{x['whole_over_async']:.2f}x** "
            f"({x['whole_over_async_range'][0]:.2f}-{x['whole_over_async_range'][1]:.2f})"
            f"|{x['small_over_async']:.2f}x"
            for x in r["rows"]
        ],
    )
    out += [
        "Within one rollout batch shaped like the original's, asynchrony only saves the "
        "per-turn barrier (each step waits for its slowest turn), not the batch's tail: "
        "both schedules wait for the batch's longest episode. The gap grows with the slots "
        "(fewer episodes per slot, so the barrier idles a larger share) and with the spread "
        "of document lengths. The small-batch lockstep of benchmark 2 is much slower "
        "because it idles slots between its batches as well, which the original does not.",
        "",
    ]
    return out


def _targets_table(r: dict[str, Any]) -> list[str]:
    rows = [
        f"{t['metric']}|{t['measured']}|{t['target']}|{t['ratio']:.2f}|info"
        for t in r["targets"]
    ]
    return table("metric|measured|target|ratio|status", rows)


def loop(
    r: dict[str, Any], plot: str | None, previous: dict[str, Any] | None
) -> list[str]:
    c, rows = r["config"], r["rows"]
    loops = [ORIGINAL] + [str(k) for k in c["offpolicyness"]]
    tc = c["train"]
    calib = {x["mix"]: x["calibration"] for x in rows}
    out = [
        f"Each loop trains {c['steps']} steps of {c['batch']} questions x {c['group_size']} "
        f"episodes on {c['slots']} simulated slots, at most {c['concurrency']} questions in "
        "flight in AReaL's executor (config.yaml's shape scaled down: a step's batch is "
        "twice the slots in episodes, half its questions in flight). Engine: "
        + engine_model(c["cost"], c["outputs"], c)
        + ". No CPU is spent on generation or training.",
        "",
        "- **original**: the verl MemAgent loop: the step's whole batch in flight, lockstep "
        "turn by turn (`bench/lockstep.py`), then train.",
        "- **AReaL, offpolicyness k**: AReaL's `WorkflowExecutor` with its "
        "`StalenessManager` (`consumer_batch_size` = batch, `max_head_offpolicyness` = k; "
        "k = 0 is the synchronous loop; `max_concurrent_rollouts` as above) runs "
        "`MemAgentWorkflow`; the trainer takes a batch (`prepare_batch` over a "
        "`StatefulDataLoader`), trains, then bumps the version, as `PPOTrainer.train` does; "
        "generation goes on meanwhile as far as the staleness bound admits.",
        "- **Train step** (`bench/train_cost.py`): a sleep of ratio x R x "
        f"({tc['fixed']:g} + {tc['per_row']:g} x rows / rows_ref + {tc['per_token']:g} x "
        "tokens / tokens_ref), tokens being every row's prompt and output. R, rows_ref and "
        "tokens_ref are calibrated per mix from a dry run of the same questions: R is the "
        "mean synchronous rollout time of a batch (zero driver cost), so at ratio 1 the "
        "mean train step lasts as long as the mean synchronous rollout. "
        + "; ".join(
            f"{m}: R = {x['rollout_s']:.2f} s, {x['rows']:.0f} rows, {x['tokens']:,.0f} tokens"
            for m, x in calib.items()
        )
        + ".",
        f"- **Steady state**: episodes/s over steps {c['warmup'] + 1}-{c['steps']} (the first "
        "step's rollout cannot overlap anything). **Ideal**: perfect overlap, each step "
        "max(engine-bound rollout, train step), on the synchronous loop's batches.",
        "",
        *_targets_table(r),
    ]
    if plot:
        out += [f"![episodes/s against the train/rollout ratio]({plot})", ""]
    k = "2" if "2" in loops else loops[-1]  # config.yaml's bound, if it was run
    head = "mix|train/rollout ratio|" + "|".join(label(k) for k in loops)
    head += (
        f"|original at zero driver cost|ideal|AReaL {k} / original|AReaL {k} / original "
        f"at zero driver cost|AReaL {k} / synchronous"
    )
    body = []
    for x in rows:
        eps = {k: x["loops"][k]["episodes_per_s"] for k in loops}
        best, pred = eps[k], x["predicted"]
        body.append(
            f"{x['mix']}|{x['ratio']:g}|"
            + "|".join(f"{eps[k]:.2f}" for k in loops)
            + f"|{pred['original_zero_cost']:.2f}|{pred['ideal']:.2f}"
            f"|{best / eps[ORIGINAL]:.2f}x|**{best / pred['original_zero_cost']:.2f}x**"
            f"|{best / eps['0']:.2f}x"
        )
    out += ["Trained episodes per second (steady state):", ""] + table(head, body)
    out += ["Observed staleness and where the time went:", ""]
    body = []
    for x in rows:
        for k in loops:
            res = x["loops"][k]
            beyond = f"{res['beyond_bound']:.0%}" if "beyond_bound" in res else "-"
            body.append(
                f"{x['mix']}|{x['ratio']:g}|{label(k)}|{res['staleness_mean']:.2f} / "
                f"{res['staleness_max']}|{res['token_staleness_mean']:.2f}|{beyond}"
                f"|{res['rollout_wait_s']:.2f}|{res['train_s']:.2f}|{res['slot_utilisation']:.0%}"
                f"|{res['cpu_share']:.0%}"
            )
    out += table(
        "mix|ratio|loop|head staleness mean / max|token staleness mean|questions beyond "
        "the bound|trainer waits for rollout, s/step|train s/step|slots busy|driver CPU",
        body,
    )
    out += _fidelity(rows) + _repro(r, previous)
    return out


def _fidelity(rows: list[dict[str, Any]]) -> list[str]:
    errs = []
    for x in rows:
        p = x["predicted"]
        errs.append(x["loops"]["0"]["episodes_per_s"] / p["sync_zero_cost"])
        errs.append(x["loops"][ORIGINAL]["episodes_per_s"] / p["original_zero_cost"])
    return [
        "*Head staleness* is the policy versions between the trainer and a question's "
        "oldest generated token when the question is trained; *token staleness* the same "
        "for every generated token (tokens carry the version at which their turn entered a "
        "slot); *beyond the bound*: questions whose head staleness exceeds "
        "`max_head_offpolicyness`. The two synchronous loops reach "
        f"{min(errs):.0%}-{max(errs):.0%} of the episodes/s their zero-driver-cost "
        "schedules predict from the dry run: the driver's CPU, AReaL's 50 ms runner poll "
        "and the other work on the machine cost that much. The lockstep loop suffers most "
        "(each turn's barrier waits for the most delayed of its requests), so the headline "
        "compares AReaL, as measured, with the original's schedule at zero driver cost.",
        "",
    ]


def repro(current: dict[str, Any], previous: dict[str, Any]) -> dict[str, Any] | None:
    """Per-configuration deviation of episodes/s between two runs, if comparable."""
    if previous.get("config") != current.get("config"):
        return None
    devs = []
    for a, b in zip(current["rows"], previous["rows"], strict=True):
        for k, res in a["loops"].items():
            ref = b["loops"][k]["episodes_per_s"]
            devs.append(abs(res["episodes_per_s"] - ref) / ref)
    return {
        "date": previous["machine"]["date"],
        "load": previous.get("loadavg_before", [float("nan")])[0],
        "max": max(devs),
        "median": statistics.median(devs),
        "n": len(devs),
    }


def _repro(r: dict[str, Any], previous: dict[str, Any] | None) -> list[str]:
    cmp = repro(r, previous) if previous else None
    if cmp is None:
        return [
            "Reproducibility: no earlier run with the same configuration in this folder "
            "(`loop.previous.json`) to compare with.",
            "",
        ]
    ok = "within" if cmp["max"] <= TOLERANCE else "**not** within"
    return [
        f"Reproducibility: against the previous run in this folder ({cmp['date']}, load "
        f"{cmp['load']:.1f}), episodes/s of the {cmp['n']} loop configurations differ by "
        f"{cmp['median']:.1%} (median) and {cmp['max']:.1%} at most: {ok} "
        f"{TOLERANCE:.0%}.",
        "",
    ]

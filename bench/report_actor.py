"""``results.md`` section of benchmark 7: the actor's passes, two options, a GPU model."""

from __future__ import annotations

from typing import Any

from bench.report_loop import table as _table
from bench.report_sections import targets

PASSES = ("recompute_logp", "train_step")


def _cell(value: float | None, fmt: str = "{:.2f}", missing: str = "–") -> str:
    return missing if value is None else fmt.format(value)


def _span(stat: dict[str, Any], fmt: str = "{:.2f}", missing: str = "–") -> str:
    """Mean (min-max) over the seeds; ``missing`` where no seed has a value."""
    if stat["mean"] is None:
        return missing
    if stat["n"] < 2:
        return fmt.format(stat["mean"])
    return (
        f"{fmt.format(stat['mean'])} ({fmt.format(stat['min'])}-"
        f"{fmt.format(stat['max'])})"
    )


def actor(r: dict[str, Any]) -> list[str]:
    c, cfgs = r["config"], r["configs"]
    base = cfgs["baseline"]["cpu_actor_s"]["mean"] or 0.0
    per_config = [
        f"{name}|{_span(a['cpu_recompute_logp_s'])}|{_span(a['cpu_train_step_s'])}"
        f"|{_span(a['cpu_actor_s'])}|"
        + (
            f"{a['cpu_actor_s']['mean'] / base - 1:+.0%}"
            if base and a["cpu_actor_s"]["mean"] is not None
            else ""
        )
        + f"|{_span(a['wall_actor_s'])}|{_span(a['rows_trained'], '{:.0f}')}"
        f"|{_span(a['tokens_trained'], '{:.0f}')}|{_span(a['tied_share'], '{:.0%}')}"
        f"|{a['reached']} of {len(a['seeds'])}"
        f"|{_span(a['step_to_0.9'], '{:.0f}', 'never')}"
        f"|{_span(a['seconds_to_0.9'], '{:.0f}', 'never')}"
        f"|{_span(a['final_eval'], '{:.3f}')}"
        for name, a in cfgs.items()
    ]
    runs = [
        f"{s['run']}|{s['seed']}|{_cell(s['cpu_recompute_logp_s'])}"
        f"|{_cell(s['cpu_train_step_s'])}|{_cell(s['wall_recompute_logp_s'])}"
        f"|{_cell(s['wall_train_step_s'])}|{_cell(s['rows_trained'], '{:.0f}')}"
        f"|{_cell(s['tokens_trained'], '{:.0f}')}|{_cell(s['tied_share'], '{:.0%}')}"
        f"|{_cell(s['step_to_0.9'], '{}', 'never')}"
        f"|{_cell(s['seconds_to_0.9'], '{:.0f}', 'never')}"
        f"|{_cell(s['final_eval'], '{:.3f}')}|{s['wall_s']:.0f}"
        for s in r["runs"]
    ]
    out = [
        f"The CPU learning run (`{c['file']}`, {c['total_train_steps']} steps, "
        f"{' '.join(f'`{o}`' for o in c['overrides'])}: one process) in four "
        "configurations on seeds "
        f"{', '.join(map(str, c['seeds']))}: `baseline`; `skip_tied` "
        "(`memagent.skip_tied_groups=true`); `loglinear` "
        "(`actor.prox_logp_method=loglinear`); `both`; and one `metrics` run "
        "(`prox_logp_method=metrics`) on seed 0. The actor's passes are timed in CPU "
        "seconds of the thread that computes them (`bench/actor_run.py`; one intra-op "
        "thread, so other work on the machine does not inflate them) and in AReaL's "
        "wall seconds (`timeperf/*`); per-step means over steps 2 to the last (step 1 "
        "carries start-up work). The CPU run has no reference model (`kl_ctl: 0`), "
        "so no reference pass. Per configuration: mean (min-max) over the seeds; "
        "– where there is no such pass. "
        f"{c['parallel_runs']} runs at a time; total {r['total_wall_s'] / 60:.1f} min.",
        "",
        *targets(r),
        *_table(
            "configuration|proximal pass CPU s/step|training pass CPU s/step"
            "|actor CPU s/step|vs baseline|actor wall s/step|rows trained/step"
            "|tokens trained/step|groups tied|seeds reaching 0.9"
            "|steps to 0.9 (seeds reaching it)|seconds to 0.9|final held-out acc.",
            per_config,
        ),
        *_table(
            "run|seed|proximal CPU s|training CPU s|proximal wall s|training wall s"
            "|rows|tokens|tied|step to 0.9|seconds to 0.9|final|wall s",
            runs,
        ),
    ]
    metrics = [s for s in r["runs"] if s.get("prox_approx_error")]
    if metrics:
        rows = [
            f"{method}|{e['logp_abs_err']:.2e}|{e['logp_abs_err_max']:.2e}"
            f"|{e['behave_weight_abs_err']:.2e}|{e['weight_abs_err']:.2e}"
            for s in metrics
            for method, e in s["prox_approx_error"].items()
        ]
        out += [
            "Approximation error of the proximal log-probabilities "
            "(`prox_logp_method=metrics`: AReaL recomputes them and logs each "
            "approximation against them; per-step means over the run of seed "
            f"{metrics[0]['seed']}):",
            "",
            *_table(
                "method|mean abs. error of log p|largest abs. error (mean of steps)"
                "|mean abs. error of π_prox/π_behave|mean abs. error of π_θ/π_prox",
                rows,
            ),
        ]
    return out + cost_model(r["cost_model"])


def cost_model(m: dict[str, Any]) -> list[str]:
    p = m["passes"]
    rows = [
        f"{s['tie_rate']:.0%}|{s['skip_tied']:.0%}|{s['loglinear']:.0%}"
        f"|{s['both']:.0%}|{m['reported_actor_s'] * s['both']:.0f} s"
        for s in m["savings"]
    ]
    ties = ", ".join(
        f"{float(k):.2f}: {v:.0%}" for k, v in m["tie_rate_at_success"].items()
    )
    return [
        "**A cost model for `config.yaml` on GPU (a model, not a measurement).** "
        f"{m['questions']} questions x {m['group_size']} episodes per step, 6-9 chunks "
        "per document read up to `max_chunks` 8, at the budgets' upper end: a memory row "
        f"of ~{m['tokens_per_row']['memory']:,} tokens (template and question ~200, "
        "memory 1,024, chunk 5,000, new memory 1,024), a final row of "
        f"~{m['tokens_per_row']['final']:,}: ~{m['rows_per_step']:,.0f} rows and "
        f"~{m['tokens_per_step'] / 1e6:.0f}M tokens per step. Passes over every token, in "
        f"forward-pass equivalents: reference {p['reference']:g}, proximal "
        f"{p['proximal']:g}, training {p['training']:g} (forward, backward ~2x, and the "
        "forward again under gradient checkpointing). Every pass costs in proportion "
        "to the tokens, so skipping tied groups saves the tie rate's share of all "
        "passes, and `loglinear` the proximal pass's share. Fixed costs (optimizer "
        "step, weight sync) are left out, so these are upper bounds. A group of "
        f"{m['group_size']} ties with probability p^{m['group_size']} + "
        f"(1-p)^{m['group_size']} at a per-question success rate p ({ties}). The last "
        f"column applies the saving to the {m['reported_actor_s']:,} s of actor time "
        f"per {m['reported_step_s']:,} s step reported for the 7B run on 32 H100s "
        "(MemAgent issue #31).",
        "",
        *_table(
            "groups tied|skip_tied saves|loglinear saves|both save"
            "|both, of 2,100 s actor time",
            rows,
        ),
    ]

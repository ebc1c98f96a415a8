"""``summary.json``, ``results.md`` and ``accuracy.png`` of an eval run, from what
is on disk (the per-length result files), with the run's protocol written out."""

from __future__ import annotations

from pathlib import Path

from memagent_workflow.data.files import write_json
from memagent_workflow.eval import report, results, sets, targets
from memagent_workflow.eval.config import MemAgentEvalConfig
from memagent_workflow.eval.targets import Target
from memagent_workflow.prompts import load_prompts


def write_summary(
    config: MemAgentEvalConfig,
    ids: dict[Target, dict[str, list[str]]],
    kinds: dict[Target, str | None],
) -> dict:
    """summary.json, results.md and accuracy.png from what is on disk."""
    ev, g, mem = config.eval, config.gconfig, config.memagent
    label = ev.label or Path(config.actor.path.rstrip("/")).name
    answer = {
        "boxed": "final answer in \\boxed{}",
        "answer_is": "final answer after 'the answer is'",
    }[mem.answer_protocol]
    meta = {
        "model": config.actor.path,
        "label": label,
        "preset": ev.preset,
        "answer_protocol": mem.answer_protocol,
        "n_samples": ev.n_samples,
        "headline": ev.headline,
        "prompt_build": mem.prompt_build,
        "protocol": (
            f"mode {ev.mode} (this run); "
            f"RULER-HQA{' (preset: ' + ev.preset + ')' if ev.preset else ''}, "
            f"{ev.n_samples} sample(s) per question, {answer}, sub-EM against the "
            f"first gold answer (the original's per-sample score; RULER tasks: "
            f"RULER's string match); temperature "
            f"{g.temperature}, top_p {g.top_p}, chunk {mem.chunk_tokens}, "
            f"memory {mem.max_memory_tokens}, final {mem.max_final_tokens}, "
            f"max_chunks {mem.max_chunks or 'none'}, "
            f"prompts {load_prompts(mem.prompts, mem.answer_protocol).source} "
            f"(encoded as {mem.prompt_build})"
        ),
    }
    summary = targets.summarize(
        ev.output_dir, {t: list(a) for t, a in ids.items()}, meta, ev.n_samples
    )
    built = sorted({t.length for t, kind in kinds.items() if kind == sets.BUILT_SET})
    for row in summary["lengths"]:
        row["set"] = sets.BUILT_SET if row["length"] in built else None
    if built:
        summary["meta"]["note"] = (
            f"N={built}: {sets.BUILT_SET} sets built locally by prepare_eval_data.py "
            "--build (the official questions, documents sampled here), not the "
            "official sets"
        )
    summary["anchors"] = report.anchors_for(
        sorted({r["length"] for r in summary["lengths"]}), config.actor.path
    )
    write_json(Path(ev.output_dir) / results.SUMMARY_FILE, summary)
    report.write_report(summary, ev.output_dir, title=f"RULER-HQA: {label}")
    return summary

"""Ask a MemAgent model a question about your own document, and watch its memory.

    python3 examples/ask.py --config config_eval.yaml actor.path=CKPT \\
        --document my.md --question "Who ...?" [--answer GOLD] [--trace run.html]

The document (a text or Markdown file, ``-`` for standard input) runs through
``examples/eval.py``'s workflow, prompts, chunking and engine setup (the same
``--config`` and overrides: ``scheduler.type=local`` launches SGLang,
``AREAL_LLM_SERVER_ADDRS`` names running servers). A bar counts the chunks read
with the memory's current length; the final memory and the answer are printed;
``--trace`` writes the page ``view_trace.py`` writes for an eval, for this run.
``--answer`` (optional) scores the answer and marks it in the memory. Exit
status 2: an input refused; 1: the episode failed, or gave no result within
``rollout.request_timeout`` seconds, the cause in one line. Without a GPU:
docs/trace.md.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path
from typing import Any

from areal.utils import logging
from tqdm import tqdm

from memagent_workflow.config import workflow_kwargs
from memagent_workflow.eval import diagnostics, trace, trace_page
from memagent_workflow.eval.ask import (
    AskRefused,
    AskWorkflow,
    check_question,
    encode_stream,
    open_document,
    read_progress,
    save_ids,
)
from memagent_workflow.eval.ask_wait import EpisodeLost, wait_record
from memagent_workflow.eval.config import MemAgentEvalConfig
from memagent_workflow.eval.engine import (
    ROLLOUT_ROLE,
    ClusterInference,
    open_engine,
)
from memagent_workflow.infra.config_loader import exits_on_config_error
from memagent_workflow.infra.paths import load_entry_config, make_shared_folders
from memagent_workflow.prompts.order import check_prompt_order

logger = logging.getLogger("MemAgentAsk")
WORKFLOW_PATH = "memagent_workflow.eval.ask.AskWorkflow"


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """This script's own flags; the rest is ``--config`` and its overrides."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--document", required=True, help="a text file, or -")
    parser.add_argument("--question", required=True)
    parser.add_argument("--answer", help="the gold answer, if known (scored)")
    parser.add_argument("--trace", type=Path, help="write the trace page here")
    return parser.parse_known_args(argv)


@exits_on_config_error
def main(
    argv: list[str],
    *,
    config_cls: type[MemAgentEvalConfig] = MemAgentEvalConfig,
    inference_cls: type[ClusterInference] = ClusterInference,
) -> None:
    """Check every input, then start the engine and run the one episode."""
    args, rest = parse_args(argv)
    try:
        stream = open_document(args.document)  # before anything is built
        config = load_entry_config(rest, config_cls, __file__)
        make_shared_folders(config.cluster)
        inference = inference_cls(config)
        sets = config.eval.lengths, config.eval.tasks
        config.eval.lengths, config.eval.tasks = [], []  # no eval file is made
        inference.prepare()  # before any server: the model may be built here
        # restored: a launched worker rebuilds the config, which needs a task
        config.eval.lengths, config.eval.tasks = sets
        kwargs = workflow_kwargs(config, gconfig=config.gconfig, trace=True)
        try:
            workflow = AskWorkflow(**kwargs)
            check_prompt_order(config.actor.path, workflow.prompts.memory_update, "ask")
        except ValueError as exc:  # chunk size, prompts (and their order): the knob
            raise AskRefused(str(exc)) from None
        check_question(workflow, args.question)
        ids = encode_stream(workflow.tokenizer, stream, args.document)
    except AskRefused as exc:
        logger.error(f"refused: {exc}")
        sys.exit(2)
    try:
        rec = run(config, inference, workflow, kwargs, ids, args)
    except EpisodeLost as exc:  # the engine and its processes are gone by now
        logger.error(f"the episode failed: {exc}")
        sys.exit(1)
    show(rec, args)


def run(
    config: MemAgentEvalConfig,
    inference: ClusterInference,
    workflow: AskWorkflow,
    kwargs: dict[str, Any],
    ids: Any,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """The episode through the engine, a bar over its chunks; `EpisodeLost` if
    it gives no record (within ``rollout.request_timeout``: ``ask_wait.py``)."""
    n_chunks = -(-len(ids) // workflow.chunk_tokens)
    bar: Any = None
    progress: Path | None = None
    files: list[Path] = []  # on the shared root, removed after the run

    def on_turn(turn: int, memory_tokens: int) -> None:
        bar.update(1)
        bar.set_postfix(memory_tokens=memory_tokens, refresh=False)

    def on_poll() -> None:
        if progress is not None and (last := read_progress(progress)):
            bar.update(last[0] + 1 - bar.n)
            bar.set_postfix(memory_tokens=last[1], refresh=False)

    data = {
        "id": Path(args.document).name if args.document != "-" else "stdin",
        "question": args.question,
        "answers": [args.answer] if args.answer else [],
        "context_ids": ids,
    }
    config.eval.concurrency = 1
    role = None
    try:
        with open_engine(config, inference) as engine:
            bar = tqdm(total=n_chunks, desc="chunks", unit="chunk", file=sys.stderr)
            if config.scheduler.type is None:  # in this process
                workflow.on_turn = on_turn
                engine.submit(data, workflow=workflow)
            else:  # a remote worker: the ids and its turns in files on the shared root
                root = config.cluster.fileroot
                progress = Path(root) / "ask" / f"{uuid.uuid4()}.txt"
                progress.parent.mkdir(parents=True, exist_ok=True)
                files += [progress, save_ids(data.pop("context_ids"), root)]
                data["context_ids_file"] = str(files[1])
                remote = {**kwargs, "progress_file": str(progress)}
                engine.submit(data, workflow=WORKFLOW_PATH, workflow_kwargs=remote)
                role = ROLLOUT_ROLE
            rec = wait_record(
                engine,
                config.rollout.request_timeout,
                on_poll=on_poll,
                worker_role=role,
            )
            bar.update(n_chunks - bar.n)
    finally:
        if bar is not None:
            bar.close()
        for path in files:
            path.unlink(missing_ok=True)
    return rec


def show(rec: dict[str, Any], args: argparse.Namespace) -> None:
    """Print the final memory and the answer; write the trace page."""
    if rec.get("error"):
        logger.error(f"the episode failed: {rec['error']}")
        sys.exit(1)
    tr = rec.pop("trace")
    print(f"final memory ({len(tr['turns'])} turns): {tr['final_memory']}")
    print(f"answer: {rec['prediction']}")
    print(f"extracted: {(rec['extracted'] or '').strip()}")
    if args.answer:
        right = trace.answered(rec)
        kind = diagnostics.kind(tr, right) or "answered right"
        print(f"gold: {args.answer} -> {'right' if right else 'wrong'} ({kind})")
    if args.trace:
        # no --answer: unscored (None), never shown as a wrong answer
        line = {**rec, **tr, "answered": trace.answered(rec) if args.answer else None}
        key = (rec["id"], 0)
        m = diagnostics.split({key: rec}, {key: line}) if args.answer else None
        rows = [{"task": "ask", "length": tr["n_chunks"], "mode": "memagent"}]
        rows[0]["memory"] = m or {"traced": 1, **dict.fromkeys(diagnostics.COLUMNS)}
        sample = trace_page.sample_view("ask", line)
        page = trace_page.page_html(f"ask: {rec['id']}", rows, [sample])
        args.trace.parent.mkdir(parents=True, exist_ok=True)
        args.trace.write_text(page, encoding="utf-8")
        print(f"trace: {args.trace}")


if __name__ == "__main__":
    main(sys.argv[1:])

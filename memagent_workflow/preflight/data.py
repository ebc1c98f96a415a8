"""Data and prompts: the train/valid files (or the eval files) exist and every
row passes the project's schema; the prompts file is sound and its templates
leave room for a full chunk (the same checks the entry scripts run at start).
``turn_budgets_of`` counts a run's turns for the memory check too.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from memagent_workflow.context import (
    FIT_RULE,
    TurnBudget,
    template_tokens,
    turn_budgets,
)
from memagent_workflow.data.files import DataError, read_records
from memagent_workflow.data.schema import BadField, check_rows
from memagent_workflow.preflight.model import tokenizer_local
from memagent_workflow.preflight.verdict import Check, fail, not_applicable, ok, warn

if TYPE_CHECKING:
    from memagent_workflow.preflight.run import Run

FAMILY = "data"
# examples/train.py reads the files with `datasets` and needs these columns.
TRAIN_COLUMNS = ("id", "question", "context", "answers")


def _train_columns(raw: Any, row: dict) -> None:
    missing = [k for k in TRAIN_COLUMNS if k not in raw]
    if missing:
        raise BadField(
            tuple(missing), "missing; convert the file with examples/prepare_data.py"
        )


def _progress(records: Iterable, label: str) -> Iterator:
    yield from tqdm(
        records, desc=f"preflight: {label}", unit="row", file=sys.stderr, leave=False
    )


def _scan(run: Run, rows: Iterable[dict]) -> int:
    count = 0
    for row in rows:
        count += 1
        chars = len(row["context"])
        if chars > (run.longest_context_chars or 0):
            run.longest_context_chars = chars
    return count


def _first_lines(text: str, n: int = 4) -> str:
    lines = text.splitlines()
    return " / ".join(lines[:n]) + (
        f" / ... ({len(lines) - n} more)" if len(lines) > n else ""
    )


def _capped(run: Run) -> str:
    cap = run.options.max_rows
    return f" (first {cap} rows, --max-rows)" if cap else ""


def check_train_file(run: Run, role: str) -> Check:
    section = getattr(run.config, f"{role}_dataset")
    name = f"{role}_dataset.path"
    if section is None:
        return not_applicable(FAMILY, name, f"no {role}_dataset")
    path = Path(section.path)
    if not path.is_file():
        if run.job_provides_inputs:
            return not_applicable(
                FAMILY, name, f"{path} missing: {run.hook} writes it at start"
            )
        return fail(
            FAMILY,
            name,
            f"{path}: no such file",
            "a file of {id, question, context, answers} rows",
            "write it with examples/prepare_data.py (docs/gpu.md)",
        )
    records = itertools.islice(read_records(path), run.options.max_rows)
    try:
        n = _scan(
            run,
            check_rows(_progress(records, path.name), str(path), extra=_train_columns),
        )
    except DataError as exc:
        return fail(
            FAMILY,
            name,
            _first_lines(str(exc)),
            "every row valid",
            "fix or regenerate the file with examples/prepare_data.py",
        )
    needed = f">= batch_size {section.batch_size} valid rows"
    found = f"{path}: {n} valid rows{_capped(run)}"
    if role == "train":
        run.train_rows = n if not run.options.max_rows else None
    if n < section.batch_size:
        return fail(
            FAMILY, name, found, needed, "not one batch: add rows or lower batch_size"
        )
    return ok(FAMILY, name, found, needed)


def check_eval_files(run: Run) -> Check:
    from memagent_workflow.eval import sets

    ev = run.config.eval
    name = "eval.data_root"
    missing = [n for n in ev.lengths if not sets.eval_file(ev.data_root, n).is_file()]
    if missing and run.job_provides_inputs:
        return not_applicable(
            FAMILY, name, f"eval_{missing}.json missing: {run.hook} writes them"
        )
    needed = f"eval_N.json for N in {list(ev.lengths)}, every row valid"
    if missing:
        return fail(
            FAMILY,
            name,
            f"{ev.data_root}: no eval file for N={missing}",
            needed,
            "examples/prepare_eval_data.py downloads or builds them (docs/eval.md)",
        )
    total = 0
    for n in ev.lengths:
        path = sets.eval_file(ev.data_root, n)
        samples = itertools.islice(sets.iter_eval_file(path), run.options.max_rows)
        try:
            total += _scan(run, _progress(samples, path.name))
        except DataError as exc:
            return fail(
                FAMILY, name, _first_lines(str(exc)), needed, "rebuild the file"
            )
    return ok(
        FAMILY,
        name,
        f"{len(ev.lengths)} files, {total} valid samples{_capped(run)}",
        needed,
    )


def check_prompts(run: Run) -> Check:
    from memagent_workflow.prompts import PromptFileError, load_prompts

    name = "prompts fit a turn"
    cfg = run.config
    m = cfg.memagent
    needed = f"every turn: {FIT_RULE}={cfg.gconfig.max_tokens}"
    try:
        prompts = load_prompts(m.prompts, m.answer_protocol)
    except PromptFileError as exc:
        return fail(FAMILY, name, str(exc), needed, "fix the prompts file")
    tok = cfg.tokenizer_path
    if not tokenizer_local(tok):
        if run.job_provides_inputs:
            return not_applicable(
                FAMILY,
                name,
                f"{prompts.source} prompts: slots ok; fit checked once {run.hook} "
                f"has built {tok}",
            )
        if not run.options.allow_download:
            return warn(
                FAMILY,
                name,
                f"{prompts.source} prompts: slots ok; fit not checked (tokenizer "
                "not cached)",
                needed,
                f"run where {tok} is cached, or pass --allow-download",
            )
    from memagent_workflow.eval.checks import EvalRefused

    try:
        _build_workflows(run)  # the workflow refuses a turn that cannot fit
    except (ValueError, OSError, EvalRefused) as exc:  # PromptFileError, a budget
        return fail(FAMILY, name, f"{prompts.source}: {exc}", needed, "see the message")
    fullest = max(turn_budgets_of(run)[0], key=lambda b: b.total)
    found = f"{prompts.source} with tokenizer {tok}; fullest {fullest.describe()}"
    return ok(FAMILY, name, found, needed)


def turn_budgets_of(run: Run) -> tuple[tuple[TurnBudget, TurnBudget], str]:
    """The run's fullest memory and final turns (``context.turn_budgets``), the
    templates counted with its tokenizer; where that cannot load here, without
    the templates, and a note saying so ("" when counted)."""
    cfg, m = run.config, run.config.memagent
    tok = cfg.tokenizer_path
    counted: tuple[int, int, int] | str = f"tokenizer {tok} not cached"
    if tokenizer_local(tok) or (
        run.options.allow_download and not run.job_provides_inputs
    ):
        counted = _count_templates(
            tok, m.prompts, m.answer_protocol, m.prompt_build, m.initial_memory
        )
    update, final, initial = (0, 0, 0) if isinstance(counted, str) else counted
    budgets = turn_budgets(
        (update, final),
        chunk_tokens=m.chunk_tokens,
        max_memory_tokens=m.max_memory_tokens,
        max_final_tokens=m.max_final_tokens,
        initial_memory_tokens=initial,
    )
    note = f"templates not counted: {counted}" if isinstance(counted, str) else ""
    return budgets, note


@lru_cache(maxsize=8)
def _count_templates(
    tokenizer_path: str,
    prompts: str | None,
    protocol: str,
    build: str,
    initial_memory: str,
) -> tuple[int, int, int] | str:
    """The two templates' own tokens and the initial memory's, or why not."""
    from memagent_workflow.prompts import load_prompts
    from memagent_workflow.workflow import load_tokenizer

    try:
        tokenizer = load_tokenizer(tokenizer_path)
        update, final = template_tokens(
            tokenizer, load_prompts(prompts, protocol), build
        )
    except (OSError, ValueError) as exc:  # no tokenizer or chat template, bad file
        return f"{exc}"[:160]
    initial = tokenizer.encode(initial_memory, add_special_tokens=False)
    return update, final, len(initial)


def _build_workflows(run: Run) -> None:
    """Build the workflows as the entry scripts do before any server starts."""
    from memagent_workflow.config import workflow_kwargs

    cfg = run.config
    if run.is_eval:
        from memagent_workflow.eval.checks import check_workflow

        check_workflow(cfg)
        return
    from memagent_workflow.workflow import MemAgentWorkflow

    MemAgentWorkflow(**workflow_kwargs(cfg))
    MemAgentWorkflow(
        **workflow_kwargs(
            cfg, gconfig=cfg.eval_gconfig, group_size=cfg.valid_group_size
        )
    )

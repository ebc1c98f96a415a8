"""Configuration of the RULER-HQA evaluation: an ``eval:`` section on top of training's."""

from __future__ import annotations

from dataclasses import dataclass, field

from memagent_workflow.config import MemAgentGRPOConfig, RunConfig
from memagent_workflow.eval.ruler.tasks import PAPER_LENGTHS, expand_names
from memagent_workflow.eval.sets import DEFAULT_LENGTHS

#: How a sample is read: MemAgent's chunks and memory, or a baseline that reads
#: the whole context in one turn (centre-cut to the window) or none of it.
MODES = ("memagent", "full_context", "no_context")
#: The RULER-HQA task (eval.lengths: documents per sample); any other name in
#: eval.tasks is a RULER task (eval.ruler_lengths: tokens).
RULER_HQA = "ruler_hqa"


@dataclass
class EvalConfig:
    """Where the eval files are, which lengths to run, and how (``eval:`` in YAML)."""

    data_root: str = field(
        default="data/ruler_hqa",
        metadata={"help": "Folder holding eval_{N}.json (prepare_eval_data.py)."},
    )
    lengths: list[int] = field(
        default_factory=lambda: list(DEFAULT_LENGTHS),
        metadata={"help": "Documents per sample (N) to evaluate, in this order."},
    )
    output_dir: str = field(
        default="outputs/eval",
        metadata={"help": "length_{N}.jsonl, summary.json, results.md, accuracy.png."},
    )
    concurrency: int = field(
        default=256,
        metadata={"help": "Samples (episodes) in flight at once (original: 256)."},
    )
    resume: bool = field(
        default=True,
        metadata={
            "help": "Skip samples already scored in output_dir and retry failed "
            "ones. false: move old results aside (*.bak) and start over."
        },
    )
    max_retries: int = field(
        default=2,
        metadata={"help": "Extra attempts for a sample whose episode raised."},
    )
    label: str = field(
        default="",
        metadata={
            "help": "Name of this run in results.md and the plot (default: "
            "the model path's last part)."
        },
    )

    mode: str = field(
        default="memagent",
        metadata={
            "help": "memagent: chunks and memory (the method). full_context: one "
            "turn with the whole context, centre-cut to fit gconfig.max_tokens "
            "(the cut is counted per sample). no_context: the question alone. "
            "Results of each mode go to their own files; the table labels them.",
            "choices": list(MODES),
        },
    )
    tasks: list[str] = field(
        default_factory=lambda: [RULER_HQA],
        metadata={
            "help": "ruler_hqa and/or RULER tasks (niah_single_1, ..., vt, fwe, "
            "qa_1; 'ruler' = the paper's eleven), from "
            "prepare_eval_data.py --ruler."
        },
    )
    ruler_lengths: list[int] = field(
        default_factory=lambda: list(PAPER_LENGTHS),
        metadata={"help": "Token lengths of the RULER tasks (eval_{task}_{L}.json)."},
    )
    ruler_data_root: str = field(
        default="data/ruler",
        metadata={"help": "Folder holding eval_{task}_{L}.json."},
    )

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"eval.mode must be one of {MODES}, got {self.mode!r}")
        ruler = [t for t in self.tasks if t != RULER_HQA]
        self.tasks = [RULER_HQA] * (RULER_HQA in self.tasks) + expand_names(ruler)
        if not self.tasks:
            raise ValueError("eval.tasks is empty")
        if ruler and (not self.ruler_lengths or min(self.ruler_lengths) < 1):
            raise ValueError(
                f"eval.ruler_lengths must be positive ints, got {self.ruler_lengths}"
            )
        if self.concurrency < 1:
            raise ValueError(f"eval.concurrency must be >= 1, got {self.concurrency}")
        if self.max_retries < 0:
            raise ValueError(f"eval.max_retries must be >= 0, got {self.max_retries}")
        if RULER_HQA not in self.tasks:
            return
        if not self.lengths or any(int(n) < 1 for n in self.lengths):
            raise ValueError(
                f"eval.lengths must be a non-empty list of positive ints, "
                f"got {self.lengths}"
            )


@dataclass
class EvalRunConfig(RunConfig):
    """``run:`` of an eval config: its config class and its inference setup."""

    config: str = field(
        default="memagent_workflow.eval.config.MemAgentEvalConfig",
        metadata={"help": "Config class that parses this file (read before parsing)."},
    )
    inference: str = field(
        default="memagent_workflow.eval.engine.ClusterInference",
        metadata={
            "help": "Class (a ClusterInference) that prepares the model and data "
            "and provides the servers or the scheduler's surroundings."
        },
    )


@dataclass
class MemAgentEvalConfig(MemAgentGRPOConfig):
    """The training config plus ``eval:``; the train-only sections keep defaults."""

    eval: EvalConfig = field(default_factory=EvalConfig)
    run: EvalRunConfig = field(default_factory=EvalRunConfig)

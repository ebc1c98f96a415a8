"""Configuration of the RULER-HQA evaluation: an ``eval:`` section on top of training's."""

from __future__ import annotations

from dataclasses import dataclass, field

from memagent_workflow.config import MemAgentGRPOConfig, RunConfig
from memagent_workflow.eval.sets import DEFAULT_LENGTHS


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

    def __post_init__(self):
        if self.concurrency < 1:
            raise ValueError(f"eval.concurrency must be >= 1, got {self.concurrency}")
        if self.max_retries < 0:
            raise ValueError(f"eval.max_retries must be >= 0, got {self.max_retries}")
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

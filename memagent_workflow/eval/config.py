"""Configuration of the RULER-HQA evaluation: an ``eval:`` section on top of training's."""

from __future__ import annotations

from dataclasses import dataclass, field

from memagent_workflow.config import MemAgentGRPOConfig, RunConfig
from memagent_workflow.eval.sets import DEFAULT_LENGTHS, OFFICIAL_LENGTHS

# eval.preset=paper: the protocol behind the MemAgent paper's RULER-HQA table
# (the original taskutils/memory_eval/run.py with method="recurrent").
PAPER = {
    "lengths": list(OFFICIAL_LENGTHS),  # 50 ... 25600 documents: 7K ... 3.5M tokens
    "headline": "non_failed",  # the original drops failed requests
    "answer_protocol": "answer_is",  # "Therefore, the answer is ..."
    "prompt_build": "text",  # messages sent as text, encoded whole by the server
    "temperature": 0.7,
    "top_p": 0.95,
}
PRESETS = ("paper",)
HEADLINES = ("all", "non_failed")


@dataclass
class EvalConfig:
    """Where the eval files are, which lengths to run, and how (``eval:`` in YAML)."""

    data_root: str = field(
        default="data/ruler_hqa",
        metadata={"help": "Folder holding eval_{N}.json (prepare_eval_data.py)."},
    )
    preset: str | None = field(
        default=None,
        metadata={
            "help": "'paper': the paper's protocol in one override (lengths 50 ... "
            "25600, answer_is, one sample at T 0.7 / top-p 0.95, the original's "
            "denominator as headline); needs memagent.prompts. See docs/eval.md.",
            "choices": [None, *PRESETS],
        },
    )
    lengths: list[int] | None = field(
        default=None,
        metadata={
            "help": "Documents per sample (N) to evaluate, in this order; null = "
            "the preset's, else 50 ... 6400."
        },
    )
    n_samples: int = field(
        default=1,
        metadata={
            "help": "Samples per question (original: 1; slime-agentic: 5). Results "
            "give the mean over samples, its std across repeats and the best repeat."
        },
    )
    headline: str | None = field(
        default=None,
        metadata={
            "help": "Denominator shown first: 'all' (failures count as wrong) or "
            "'non_failed' (the original's); null = the preset's, else 'all'.",
            "choices": [None, *HEADLINES],
        },
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
        if self.preset is not None and self.preset not in PRESETS:
            raise ValueError(f"eval.preset={self.preset!r}: choose one of {PRESETS}")
        paper = self.preset == "paper"
        if self.lengths is None:
            self.lengths = list(PAPER["lengths"] if paper else DEFAULT_LENGTHS)
        if self.headline is None:
            self.headline = PAPER["headline"] if paper else "all"
        if self.headline not in HEADLINES:
            raise ValueError(
                f"eval.headline={self.headline!r}: choose one of {HEADLINES}"
            )
        if self.n_samples < 1:
            raise ValueError(f"eval.n_samples must be >= 1, got {self.n_samples}")
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

    def __post_init__(self):
        super().__post_init__()
        # What the preset decides; checks.check_preset refuses the rest.
        if self.eval.preset == "paper":
            self.memagent.answer_protocol = PAPER["answer_protocol"]
            self.memagent.prompt_build = PAPER["prompt_build"]

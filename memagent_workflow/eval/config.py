"""Configuration of the RULER-HQA evaluation: an ``eval:`` section on top of training's."""

from __future__ import annotations

from dataclasses import dataclass, field

from memagent_workflow.config import MemAgentGRPOConfig
from memagent_workflow.eval.benchmarks import BENCHMARKS, RULER_HQA
from memagent_workflow.eval.ruler.tasks import PAPER_LENGTHS, expand_names
from memagent_workflow.eval.sets import DEFAULT_LENGTHS, OFFICIAL_LENGTHS
from memagent_workflow.prompts.original import eval_spec

# eval.preset=paper: the protocol behind the MemAgent paper's RULER-HQA table
# (the original taskutils/memory_eval/run.py with method="recurrent").
PAPER = {
    "lengths": list(OFFICIAL_LENGTHS),  # 50 ... 25600 documents: 7K ... 3.5M tokens
    "headline": "non_failed",  # the original drops failed requests
    "answer_protocol": "answer_is",  # "Therefore, the answer is ..."
    "prompt_build": "text",  # messages sent as text, encoded whole by the server
    "empty_memory": "keep",  # an empty memory is sent on as the empty text
    "prompts": "original",  # the original's eval templates (null prompts only)
    "temperature": 0.7,
    "top_p": 0.95,
}
PRESETS = ("paper",)
HEADLINES = ("all", "non_failed")

#: How a sample is read: MemAgent's chunks and memory, or a baseline that reads
#: the whole context in one turn (centre-cut to the window) or none of it.
MODES = ("memagent", "full_context", "no_context")


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
            "denominator as headline, memagent.prompts=original unless set). "
            "See docs/eval.md.",
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

    trace: bool = field(
        default=True,
        metadata={
            "help": "MemAgent mode: write each sample's memory turn by turn to "
            "{results}.trace.jsonl (memory text where it changed, its tokens, the "
            "chunk, where the evidence sits) and split the misses into never "
            "caught / caught then lost / held but answered wrong (docs/trace.md)."
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
        if self.mode not in MODES:
            raise ValueError(f"eval.mode must be one of {MODES}, got {self.mode!r}")
        ruler = [t for t in self.tasks if t != RULER_HQA]
        self.tasks = [RULER_HQA] * (RULER_HQA in self.tasks) + expand_names(ruler)
        if not self.tasks:
            raise ValueError("eval.tasks is empty")
        if self.concurrency < 1:
            raise ValueError(f"eval.concurrency must be >= 1, got {self.concurrency}")
        # The lengths of the tasks run: documents (eval.lengths), tokens (ruler_lengths).
        for key in dict.fromkeys(BENCHMARKS[t].lengths_key for t in self.tasks):
            lengths = getattr(self, key)
            if not lengths or any(int(n) < 1 for n in lengths):
                raise ValueError(
                    f"eval.{key} must be a non-empty list of positive ints, "
                    f"got {lengths}"
                )


@dataclass
class MemAgentEvalConfig(MemAgentGRPOConfig):
    """The training config plus ``eval:``; the train-only sections keep defaults."""

    eval: EvalConfig = field(default_factory=EvalConfig)

    def __post_init__(self):
        super().__post_init__()
        # What the preset decides; checks.check_preset refuses the rest.
        if self.eval.preset == "paper":
            self.memagent.answer_protocol = PAPER["answer_protocol"]
            self.memagent.prompt_build = PAPER["prompt_build"]
            self.memagent.empty_memory = PAPER["empty_memory"]
            if not self.memagent.prompts:  # like lengths: null = the preset's
                self.memagent.prompts = PAPER["prompts"]
        # A bare 'original' means the original's eval templates in an eval.
        m = self.memagent
        m.prompts = eval_spec(m.prompts, m.answer_protocol)

"""The ``standin:`` config section, on top of the product's training and eval configs.

A CPU config names these classes in ``run.config`` (read before the file is
parsed), and the stand-in's trainer, job and inference in the rest of ``run:``;
these then build the tiny model at ``actor.path``, write synthetic data where
files are missing and serve the model with the stand-in server instead of SGLang.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memagent_workflow.config import MemAgentGRPOConfig
from memagent_workflow.data.synthetic import NEEDLE_ANSWERS
from memagent_workflow.eval.config import MemAgentEvalConfig


@dataclass
class StandinConfig:
    """The CPU stand-in stack: tiny model, synthetic data, stand-in server."""

    seed: int = field(default=0, metadata={"help": "Tiny model and data seed."})
    task: str = field(
        default="two_hop",
        metadata={
            "help": "Synthetic data and model. 'two_hop': HotpotQA-shaped questions "
            "and a random tiny BPE model (a smoke run of the stack). 'needle': "
            "the needle task (memagent_workflow/data/synthetic.py) and a "
            "warm-started word-level model that GRPO can teach it "
            "(standin/needle_model.py).",
            "choices": ["two_hop", "needle"],
        },
    )
    needle_chunks: int = field(
        default=1, metadata={"help": "Chunks (sentences) per needle context."}
    )
    needle_distractors: bool = field(
        default=False,
        metadata={"help": "Other names' codes instead of filler sentences."},
    )
    synthetic_train: int = field(
        default=32, metadata={"help": "Synthetic questions when no train set exists."}
    )
    synthetic_valid: int = field(
        default=8, metadata={"help": "Synthetic questions when no valid set exists."}
    )
    synthetic_docs: int = field(
        default=12, metadata={"help": "Documents per synthetic training context."}
    )
    synthetic_eval: int = field(
        default=8,
        metadata={"help": "Synthetic questions per missing eval_{N}.json (eval only)."},
    )
    port: int = field(default=0, metadata={"help": "Server port (0 = a free one)."})
    server_addr: str = field(
        default="",
        metadata={"help": "host:port of a running stand-in server to use instead."},
    )
    ray_num_cpus: int = field(
        default=2,
        metadata={"help": "scheduler.type=ray: CPUs of the local Ray instance."},
    )
    startup_timeout: float = field(
        default=300.0,
        metadata={
            "help": "scheduler.type=local|ray: seconds to wait for a worker to "
            "start (AReaL's 30 s is short for a loaded 2-core machine)."
        },
    )
    xccl_bucket_mb: float | None = field(
        default=None,
        metadata={
            "help": "weight_update_mode=xccl: bucket size in MB (null: AReaL's 1024); "
            "a fraction of a MB splits the tiny model into several buckets."
        },
    )

    @property
    def chance(self) -> float | None:
        """Accuracy of a uniform guess among the task's answers (needle task only)."""
        return 1 / len(NEEDLE_ANSWERS) if self.task == "needle" else None

    def __post_init__(self):
        if self.task not in ("two_hop", "needle"):
            raise ValueError(f"standin.task must be two_hop or needle, got {self.task}")
        if self.needle_chunks < 1:
            raise ValueError("standin.needle_chunks must be >= 1")
        for name in ("synthetic_train", "synthetic_valid", "synthetic_eval"):
            if getattr(self, name) < 0:
                raise ValueError(f"standin.{name} must be >= 0")


@dataclass
class StandinGRPOConfig(MemAgentGRPOConfig):
    """Training config of a CPU run against the stand-in server."""

    standin: StandinConfig = field(default_factory=StandinConfig)


@dataclass
class StandinEvalConfig(MemAgentEvalConfig):
    """Eval config of a CPU run against the stand-in server."""

    standin: StandinConfig = field(default_factory=StandinConfig)

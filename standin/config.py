"""The ``standin:`` config section, on top of the product's training and eval configs.

The stand-in's entries (``python -m standin.train``, ``standin.eval``) parse a
CPU config with these classes; the product's classes refuse its ``standin:``
section. The stand-in's job and inference then build the tiny model at
``actor.path``, write synthetic data where files are missing and serve the
model with the stand-in server instead of SGLang.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memagent_workflow.config import MemAgentGRPOConfig
from memagent_workflow.data.synthetic import NEEDLE_ANSWERS
from memagent_workflow.eval.config import MemAgentEvalConfig
from memagent_workflow.serve.config import MemAgentServeConfig


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
    needle_distractors: float = field(
        default=0.0,
        metadata={
            "help": "Share of the sentences besides the needle that are other "
            "names' codes (distractors) rather than filler: 0 to 1 (false = 0, "
            "true = 1)."
        },
    )
    needle_layers: int = field(
        default=1, metadata={"help": "Needle model: transformer layers."}
    )
    needle_hidden: int = field(
        default=64, metadata={"help": "Needle model: hidden size."}
    )
    needle_heads: int = field(
        default=4, metadata={"help": "Needle model: attention heads."}
    )
    needle_init_range: float = field(
        default=0.02,
        metadata={"help": "Needle model: std of the initial weights (Qwen2's 0.02)."},
    )
    needle_warm_start_steps: int = field(
        default=1000, metadata={"help": "Needle model: format warm-start steps."}
    )
    needle_shift: float = field(
        default=0.0,
        metadata={
            "help": "Carry warm start: share of its writes on the asked name's "
            "chunk that box the answer word after the chunk's (never the chunk's "
            "own): the warm start learns to read the chunk and scores below "
            "chance; RL must redirect the read to the word itself."
        },
    )
    needle_overwrite: float = field(
        default=0.0,
        metadata={
            "help": "Carry warm start: share of its demonstrations whose memory "
            "starts as a random code instead of the initial memory; the asked "
            "name's chunk replaces it (a code written too early does not block "
            "the needle). 0 to 1."
        },
    )
    needle_carry: bool = field(
        default=False,
        metadata={
            "help": "Needle model's format warm start: a memory turn keeps the "
            "memory it was given (the initial one too) unless its chunk states "
            "the asked name's code, where it boxes a random word (when to "
            "overwrite the memory, never with what: the warm start stays at "
            "chance). The build checks this gate on every pair of names."
        },
    )
    length_eval: list[int] = field(
        default_factory=list,
        metadata={
            "help": "After training: evaluate the last checkpoint and the warm "
            "start at these lengths (chunks per document) through the eval "
            "entry (python -m standin.eval, examples/eval.py with the stand-in) "
            "and write length_table.json beside steps.jsonl "
            "(needle task; empty: no such eval)."
        },
    )
    length_eval_wiped: bool = field(
        default=False,
        metadata={
            "help": "The length eval adds a row: the trained model with "
            "memagent.wipe_memory=true (the memory-wiped control)."
        },
    )
    length_eval_config: str = field(
        default="config_eval_needle.yaml",
        metadata={"help": "The eval config of the length eval."},
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
        if not 0 <= self.needle_shift <= 1:
            raise ValueError("standin.needle_shift must be in [0, 1]")
        if not 0 <= self.needle_overwrite <= 1:
            raise ValueError("standin.needle_overwrite must be in [0, 1]")
        if not 0 <= self.needle_distractors <= 1:
            raise ValueError("standin.needle_distractors must be in [0, 1]")
        if self.length_eval and self.task != "needle":
            raise ValueError("standin.length_eval needs standin.task=needle")
        if any(n < 1 for n in self.length_eval):
            raise ValueError("standin.length_eval: lengths must be >= 1")
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


@dataclass
class StandinServeConfig(StandinEvalConfig, MemAgentServeConfig):
    """Serve config of a CPU run against the stand-in server (``python -m
    standin.serve``): the stand-in's eval config (the model at ``actor.path``
    served as it is) with ``serve:``. Defined here, in a module a launched
    worker imports, not in the entry (``__main__``)."""

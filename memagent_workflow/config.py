"""Configuration: the ``memagent:`` section on top of AReaL's GRPOConfig."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from areal.api.cli_args import GenerationHyperparameters, GRPOConfig


@dataclass
class MemAgentConfig:
    """MemAgent knobs (defaults: the paper's recipe)."""

    chunk_tokens: int = field(
        default=5000, metadata={"help": "Document tokens shown per memory turn."}
    )
    max_memory_tokens: int = field(
        default=1024, metadata={"help": "New-token budget of a memory turn."}
    )
    max_final_tokens: int = field(
        default=1024, metadata={"help": "New-token budget of the final answer turn."}
    )
    max_chunks: int | None = field(
        default=None,
        metadata={
            "help": "At most this many chunks; longer documents lose their middle "
            "(head and tail halves kept). null = read everything."
        },
    )
    group_size: int = field(
        default=16, metadata={"help": "Episodes per question (the GRPO group)."}
    )
    adv_std_norm: bool = field(
        default=False,
        metadata={"help": "Divide advantages by the group std (off: Dr. GRPO)."},
    )
    train_final_turn: bool = field(
        default=True, metadata={"help": "Train on the final-answer turn too."}
    )
    initial_memory: str = field(
        default="No previous memory", metadata={"help": "Memory before turn 1."}
    )
    engine_retry_s: float = field(
        default=60.0,
        metadata={
            "help": "How long a model call that fails (server error, dropped "
            "connection, timeout, server down) is made again before its episode "
            "fails; long enough to wait out a server restart."
        },
    )

    def __post_init__(self):
        if self.engine_retry_s < 0:
            raise ValueError(
                f"memagent.engine_retry_s must be >= 0, got {self.engine_retry_s}"
            )


@dataclass
class MemAgentGRPOConfig(GRPOConfig):
    """AReaL GRPO experiment config plus a ``memagent:`` section.

    The GRPO group lives inside the workflow, so AReaL itself must not group:
    ``gconfig.n_samples`` must be 1 and ``actor.reward_norm`` unset (AReaL 1.0.4
    normalises fixed blocks of rows, which would mix the rows of different
    episodes, since an episode has one row per turn).
    """

    memagent: MemAgentConfig = field(default_factory=MemAgentConfig)

    def __post_init__(self):
        super().__post_init__()
        if self.gconfig.n_samples != 1:
            raise ValueError(
                f"gconfig.n_samples={self.gconfig.n_samples}, but MemAgent groups "
                "episodes inside its workflow: set gconfig.n_samples=1 and put the "
                "group size in memagent.group_size"
            )
        if self.actor.reward_norm is not None:
            raise ValueError(
                "actor.reward_norm must be null for MemAgent: AReaL 1.0.4 normalises "
                "fixed blocks of rows, which mixes episodes that have one row per "
                "turn; the workflow already computes the GRPO advantage per episode "
                "(see memagent.adv_std_norm)"
            )


def workflow_kwargs(
    config: MemAgentGRPOConfig,
    gconfig: GenerationHyperparameters | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """Serialisable kwargs for ``MemAgentWorkflow`` from a loaded config."""
    kwargs = dict(
        gconfig=gconfig or config.gconfig,
        tokenizer=config.tokenizer_path,
        **asdict(config.memagent),
    )
    kwargs.update(overrides)
    return kwargs


def config_sections(argv: list[str]) -> set[str]:
    """Top-level sections of the YAML file named by ``--config`` in ``argv``.

    The entry scripts use it to pick the config class: a file with a
    ``standin:`` section is a CPU run against the stand-in server.
    """
    import yaml

    for i, arg in enumerate(argv):
        if arg == "--config" and i + 1 < len(argv):
            path = argv[i + 1]
        elif arg.startswith("--config="):
            path = arg.split("=", 1)[1]
        else:
            continue
        with open(path) as f:
            return set(yaml.safe_load(f) or {})
    return set()

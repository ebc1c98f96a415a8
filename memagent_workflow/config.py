"""Configuration: the ``memagent:`` section on top of AReaL's GRPOConfig.

Every knob carries its help text and its check here, in one place. How the
entry scripts parse a config file is ``infra/config_loader.py``'s.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from areal.api.cli_args import GenerationHyperparameters, GRPOConfig

from memagent_workflow.actor_config import MemAgentActorConfig
from memagent_workflow.prompts import load_prompts
from memagent_workflow.reward import reward_function
from memagent_workflow.slurm_config import SlurmConfig


@dataclass
class MemAgentConfig:
    """MemAgent knobs (defaults: the paper's recipe), checked here once: the
    workflow builds one from its keyword arguments."""

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
    train_memory_turns: bool = field(
        default=True,
        metadata={
            "help": "Train on the memory turns too (off: an ablation in which "
            "only the final answer is trained)."
        },
    )
    initial_memory: str = field(
        default="No previous memory", metadata={"help": "Memory before turn 1."}
    )
    wipe_memory: bool = field(
        default=False,
        metadata={
            "help": "An ablation: every turn, the final one included, is given the "
            "initial memory instead of the one just written, so nothing read "
            "reaches the answer through the memory."
        },
    )
    empty_memory: str = field(
        default="initial",
        metadata={
            "help": "What the next turn reads when a memory turn writes nothing "
            "(or only stop or out-of-vocabulary tokens): 'initial' gives it "
            "memagent.initial_memory again (the original's asynchronous training, "
            "recurrent/impls/async_memory.py); 'keep' passes the empty memory on "
            "(the original's synchronous training, run_memory_7B.sh through "
            "recurrent/impls/memory.py, and its evaluation script).",
            "choices": ["initial", "keep"],
        },
    )
    reward: str = field(
        default="original",
        metadata={
            "help": "Training reward: 'original' (the original MemAgent verifier: "
            "last 300 characters, case and spaces ignored), 'squad' (boxed "
            "exact match after SQuAD normalisation, more lenient), or the import "
            "string 'module.function' of a function (response: str, golds: "
            "list[str]) -> float, given the final turn's text.",
        },
    )
    answer_protocol: str = field(
        default="boxed",
        metadata={
            "help": "What the final turn answers with, and how it is read and "
            "scored: 'boxed' (\\boxed{}, as the released models were trained) or "
            "'answer_is' ('Therefore, the answer is ...', what the original "
            "evaluation asked for). The same key in training and eval configs.",
            "choices": ["boxed", "answer_is"],
        },
    )
    prompt_build: str = field(
        default="tokens",
        metadata={
            "help": "How a turn's prompt is encoded: 'tokens' (template pieces, the "
            "question, the memory's and the chunk's ids put together, as the "
            "original's training does) or 'text' (the whole message encoded from "
            "text each turn, chunk and memory decoded, as the original's evaluation "
            "script's server did).",
            "choices": ["tokens", "text"],
        },
    )
    prompts: str | None = field(
        default=None,
        metadata={
            "help": "YAML or JSON file with the 'memory_update' ({question}, "
            "{memory}, {chunk}) and 'final_answer' ({question}, {memory}) "
            "templates. null = the project's built-in wording. 'original': the "
            "original MemAgent's templates, downloaded at a pinned commit and "
            "checked (training: its training ones; eval: its eval ones for "
            "memagent.answer_protocol); spellings original[-train|-eval-boxed|"
            "-eval-answer_is][@COMMIT][:DIR], DIR holding the source files "
            "offline. See docs/prompts.md."
        },
    )
    engine_retry_s: float = field(
        default=60.0,
        metadata={
            "help": "How long a model call that fails (server error, dropped "
            "connection, timeout, server down) is made again before its episode "
            "fails; long enough to wait out a server restart."
        },
    )

    skip_tied_groups: bool = field(
        default=False,
        metadata={
            "help": "Keep the rows of groups whose rewards all tie (advantage 0 on "
            "every row) out of the actor's reference, proximal and training passes "
            "(docs/performance.md); false keeps the paper's objective. Tied groups are "
            "counted in steps.jsonl either way. Read by the trainer, which gives it "
            "to the actor it builds; the workflow marks tied rows whatever its value."
        },
    )

    def __post_init__(self):
        for name in ("chunk_tokens", "max_memory_tokens", "max_final_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(
                    f"memagent.{name} must be >= 1, got {getattr(self, name)}"
                )
        if self.group_size < 1:
            raise ValueError(f"memagent.group_size must be >= 1, got {self.group_size}")
        if self.max_chunks is not None and self.max_chunks < 1:
            raise ValueError(
                f"memagent.max_chunks must be >= 1 or null, got {self.max_chunks}"
            )
        if not (self.train_memory_turns or self.train_final_turn):
            raise ValueError(
                "memagent.train_memory_turns and memagent.train_final_turn are both "
                "False: no row would be trained"
            )
        if self.engine_retry_s < 0:
            raise ValueError(
                f"memagent.engine_retry_s must be >= 0, got {self.engine_retry_s}"
            )
        # Resolved once here: a bad name or import string fails at load time.
        reward_function(self.reward, self.answer_protocol)
        if self.empty_memory not in ("initial", "keep"):
            raise ValueError(
                f"memagent.empty_memory={self.empty_memory!r}: choose initial or keep"
            )
        if self.prompt_build not in ("tokens", "text"):
            raise ValueError(
                f"memagent.prompt_build={self.prompt_build!r}: choose tokens or text"
            )


# The keys of ``ref:`` that change its log-probs and must equal the actor's.
REF_TIED_KEYS = ("temperature", "attn_impl")


@dataclass
class MemAgentGRPOConfig(GRPOConfig):
    """AReaL GRPO experiment config plus a ``memagent:`` section.

    The GRPO group lives inside the workflow, so AReaL itself must not group:
    ``gconfig.n_samples`` must be 1 and ``actor.reward_norm`` unset (AReaL 1.0.4
    normalises fixed blocks of rows, which would mix the rows of different
    episodes, since an episode has one row per turn).
    """

    # AReaL's actor config plus the original's KL loss (actor.kl_loss_coef).
    actor: MemAgentActorConfig = field(default_factory=MemAgentActorConfig)
    memagent: MemAgentConfig = field(default_factory=MemAgentConfig)
    slurm: SlurmConfig = field(default_factory=SlurmConfig)  # scheduler.type=slurm
    valid_group_size: int = field(
        default=4,
        metadata={"help": "Episodes per validation question (original: 4)."},
    )
    warmup_steps: int | None = field(
        default=None,
        metadata={
            "help": "LR warm-up in training steps, whatever the data size; "
            "train.py turns it into actor.optimizer.warmup_steps_proportion. "
            "null = use warmup_steps_proportion as given."
        },
    )

    def __post_init__(self):
        super().__post_init__()
        if self.valid_group_size < 1:
            raise ValueError(
                f"valid_group_size must be >= 1, got {self.valid_group_size}"
            )
        if self.warmup_steps is not None and self.warmup_steps < 0:
            raise ValueError(
                f"warmup_steps must be >= 0 or null, got {self.warmup_steps}"
            )
        if self.gconfig.n_samples != 1:
            raise ValueError(
                f"gconfig.n_samples={self.gconfig.n_samples}, but MemAgent groups "
                "episodes inside its workflow: set gconfig.n_samples=1 and put the "
                "group size in memagent.group_size"
            )
        if self.eval_gconfig is not None and self.eval_gconfig.n_samples != 1:
            raise ValueError(
                f"eval_gconfig.n_samples={self.eval_gconfig.n_samples}, but MemAgent "
                "groups validation episodes inside its workflow: set "
                "eval_gconfig.n_samples=1 and put the number of episodes per "
                "validation question in valid_group_size"
            )
        if self.actor.reward_norm is not None:
            raise ValueError(
                "actor.reward_norm must be null for MemAgent: AReaL normalises "
                "over its own groups of rows (1.0.4: fixed blocks of rows, which mix "
                "episodes that have one row per turn; 2.0.0: the groups "
                "gconfig.n_samples forms, which MemAgent keeps at 1), while the "
                "workflow already computes the GRPO advantage per episode (see "
                "memagent.adv_std_norm)"
            )
        self._check_reference()

    def _check_reference(self) -> None:
        """With a KL term on, the reference's log-probs are compared with the
        actor's: ``ref:`` must compute them alike (temperature, attention)."""
        kl_on = self.actor.kl_loss_coef > 0 or self.actor.kl_ctl > 0
        if self.ref is None or not kl_on:
            return
        for key in REF_TIED_KEYS:
            ref, actor = getattr(self.ref, key), getattr(self.actor, key)
            if ref != actor:
                raise ValueError(
                    f"ref.{key}={ref!r} differs from actor.{key}={actor!r}: with a "
                    f"KL term on (actor.kl_loss_coef={self.actor.kl_loss_coef}, "
                    f"actor.kl_ctl={self.actor.kl_ctl}) the reference's log-probs "
                    "must be computed as the actor's, or the KL is biased from the "
                    f"first step; set ref.{key}: ${{actor.{key}}} (as config.yaml "
                    "does)"
                )


def workflow_kwargs(
    config: MemAgentGRPOConfig,
    gconfig: GenerationHyperparameters | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """Serialisable kwargs for ``MemAgentWorkflow`` from a loaded config.

    The prompts file is read (and its slots checked) here, on the controller:
    workers get the template texts, so they need no access to the file.
    """
    memagent = asdict(config.memagent)
    prompts = load_prompts(memagent.pop("prompts"), memagent["answer_protocol"])
    kwargs = dict(
        gconfig=gconfig or config.gconfig,
        tokenizer=config.tokenizer_path,
        prompts={
            "memory_update": prompts.memory_update,
            "final_answer": prompts.final_answer,
            "source": prompts.source,
        },
        **memagent,
    )
    kwargs.update(overrides)
    return kwargs


def warmup_proportion(warmup_steps: int, total_steps: int) -> float:
    """``warmup_steps_proportion`` that makes AReaL warm up exactly ``warmup_steps``.

    AReaL 1.0.4 warms up ``int(proportion * total_steps)`` steps; the half step
    keeps float rounding from landing one short.
    """
    if total_steps < 1:
        raise ValueError(f"no training steps (total_steps={total_steps})")
    return min(1.0, (warmup_steps + 0.5) / total_steps) if warmup_steps else 0.0

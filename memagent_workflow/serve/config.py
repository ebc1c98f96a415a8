"""Configuration of the service: a ``serve:`` section on top of the eval's.

The episode itself is configured as for ``examples/eval.py`` and ``ask.py``
(``memagent:``, ``gconfig:``, the engine's sections); ``serve:`` holds what
only a service has: where it listens, how many episodes it runs at once, how
many it queues, and the limits of a request.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memagent_workflow.eval.config import MemAgentEvalConfig


@dataclass
class ServeConfig:
    """The OpenAI-compatible service (``serve:`` in YAML; docs/serve.md)."""

    host: str = field(
        default="127.0.0.1",
        metadata={
            "help": "Address to listen on. Anything but loopback needs an API key "
            "(MEMAGENT_API_KEY or --api-key)."
        },
    )
    port: int = field(default=8000, metadata={"help": "Port (0: any free one)."})
    model_name: str = field(
        default="memagent",
        metadata={"help": "The model id of /v1/models; a request must name it."},
    )
    max_episodes: int = field(
        default=64,
        metadata={
            "help": "Episodes in flight at once, their turns interleaved on the "
            "engine; more requests wait in the queue."
        },
    )
    max_queue: int = field(
        default=256,
        metadata={
            "help": "Requests waiting for an episode slot; past it: 429 with "
            "Retry-After."
        },
    )
    max_body_bytes: int = field(
        default=64 << 20,
        metadata={"help": "Largest request body in bytes (413 past it)."},
    )
    max_document_tokens: int = field(
        default=4_000_000,
        metadata={"help": "Largest document in tokens (413 past it)."},
    )
    max_chunks: int = field(
        default=1000,
        metadata={"help": "Most chunks (memory turns) a document may need (413)."},
    )
    max_question_tokens: int = field(
        default=512,
        metadata={"help": "Longest question in tokens (400 past it)."},
    )

    def __post_init__(self):
        if not 0 <= self.port < 65536:
            raise ValueError(f"serve.port must be 0 to 65535, got {self.port}")
        for name in (
            "max_episodes",
            "max_body_bytes",
            "max_document_tokens",
            "max_chunks",
            "max_question_tokens",
        ):
            if getattr(self, name) < 1:
                raise ValueError(
                    f"serve.{name} must be >= 1, got {getattr(self, name)}"
                )
        if self.max_queue < 0:
            raise ValueError(f"serve.max_queue must be >= 0, got {self.max_queue}")
        if not self.model_name:
            raise ValueError("serve.model_name is empty")


@dataclass
class MemAgentServeConfig(MemAgentEvalConfig):
    """The eval config plus ``serve:``."""

    serve: ServeConfig = field(default_factory=ServeConfig)

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
    max_queue_bytes: int = field(
        default=256 << 20,
        metadata={
            "help": "Bytes of documents the queue may hold at once (429 past it)."
        },
    )
    call_timeout_s: float = field(
        default=60.0,
        metadata={
            "help": "Deadline of one model call; a server silent this long is "
            "given up on (the eval's rollout.request_timeout is not used here)."
        },
    )
    request_timeout_s: float = field(
        default=600.0,
        metadata={"help": "Deadline of a whole request's episode (504 past it)."},
    )
    engine_retry_s: float = field(
        default=5.0,
        metadata={
            "help": "How long a failed model call is made again (replaces "
            "memagent.engine_retry_s, the eval's, in the service)."
        },
    )
    probe_interval_s: float = field(
        default=2.0,
        metadata={"help": "Seconds between two probes of each model server's /health."},
    )
    probe_failures: int = field(
        default=2,
        metadata={
            "help": "Probes failed in a row after which the engine is known down: "
            "/health is 503 and new requests are 503 at once."
        },
    )
    max_restarts: int = field(
        default=3,
        metadata={
            "help": "Restarts of model servers the service launched itself, in all, "
            "once they die (0: never)."
        },
    )
    shutdown_timeout_s: float = field(
        default=10.0,
        metadata={
            "help": "On SIGTERM: how long running requests may finish (queued "
            "ones are answered 503 at once)."
        },
    )
    openapi: bool = field(
        default=False,
        metadata={"help": "Serve /openapi.json (off: the routes are documented "
                  "in docs/serve.md)."},
    )  # fmt: skip

    def __post_init__(self):
        if not 0 <= self.port < 65536:
            raise ValueError(f"serve.port must be 0 to 65535, got {self.port}")
        for name in (
            "max_episodes",
            "max_body_bytes",
            "max_document_tokens",
            "max_chunks",
            "max_question_tokens",
            "max_queue_bytes",
            "probe_failures",
        ):
            if getattr(self, name) < 1:
                raise ValueError(
                    f"serve.{name} must be >= 1, got {getattr(self, name)}"
                )
        for name in (
            "call_timeout_s",
            "request_timeout_s",
            "probe_interval_s",
            "shutdown_timeout_s",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"serve.{name} must be > 0, got {getattr(self, name)}")
        for name in ("engine_retry_s", "max_restarts"):
            if getattr(self, name) < 0:
                raise ValueError(
                    f"serve.{name} must be >= 0, got {getattr(self, name)}"
                )
        if self.max_queue < 0:
            raise ValueError(f"serve.max_queue must be >= 0, got {self.max_queue}")
        if not self.model_name:
            raise ValueError("serve.model_name is empty")


@dataclass
class MemAgentServeConfig(MemAgentEvalConfig):
    """The eval config plus ``serve:``."""

    serve: ServeConfig = field(default_factory=ServeConfig)

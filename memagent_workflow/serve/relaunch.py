"""The engine the service calls, which can be started again: ``serve_engine``
held open for the whole run; where the service launched its model servers
itself (``scheduler.type=local``, or an entry's inference that starts them),
``restart`` closes it, servers and client, and opens it anew, on the same
settings. Servers named by address are never restarted: they are probed
until they answer (``serve.health``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

from areal.api import ModelRequest, ModelResponse

from memagent_workflow.eval.config import MemAgentEvalConfig
from memagent_workflow.eval.engine import ClusterInference
from memagent_workflow.serve.engine import serve_engine


class ServedEngine:
    """``serve_engine``'s engine behind one handle that outlives a restart."""

    def __init__(self, config: MemAgentEvalConfig, inference: ClusterInference):
        self.config, self.inference = config, inference
        self.launched = inference.launches_servers()
        self._stack: contextlib.ExitStack | None = None
        self._lock = threading.Lock()
        self.client: Any = None

    def __enter__(self) -> ServedEngine:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        with self._lock:
            stack = contextlib.ExitStack()
            self.client = stack.enter_context(serve_engine(self.config, self.inference))
            self._stack = stack

    def close(self) -> None:
        with self._lock:
            stack, self._stack = self._stack, None
        if stack is not None:
            stack.close()

    async def restart(self) -> None:
        """Servers and client stopped and started again (off the event loop)."""
        await asyncio.to_thread(self.close)
        await asyncio.to_thread(self.open)

    @property
    def remote(self) -> Any:
        """AReaL's `RemoteInfEngine` behind the client (its servers, its
        routing), which `RemoteSGLangEngine` and `RemotevLLMEngine` wrap."""
        return getattr(self.client, "_engine", self.client)

    @property
    def addresses(self) -> list[str]:
        """``host:port`` of every model server (what is probed)."""
        return list(getattr(self.remote, "addresses", None) or [])

    @property
    def rid_to_address(self) -> dict[str, str]:
        """The server each request's episode was sent to."""
        return getattr(self.remote, "rid_to_address", {})

    async def agenerate(self, req: ModelRequest) -> ModelResponse:
        return await self.client.agenerate(req)

    def __getattr__(self, name: str) -> Any:
        if name == "client":  # not set yet
            raise AttributeError(name)
        return getattr(self.client, name)

"""The CPU stand-in as an eval run's inference (``python -m standin.eval`` passes it).

What a cluster would provide, on this machine: synthetic eval files where
missing, the tiny model at ``actor.path``, and the stand-in server in place of
SGLang or vLLM (started here, or launched by AReaL's scheduler), speaking the
protocol ``rollout.backend`` names.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memagent_workflow.eval.engine import ClusterInference
from standin.backend import ENGINES, launched_server_args
from standin.config import StandinEvalConfig
from standin.cpu_job import (
    build_model,
    ensure_synthetic_eval,
    single_controller,
    standin_server,
)


class StandinInference(ClusterInference):
    """Tiny model, synthetic data and the stand-in server, on CPU."""

    config: StandinEvalConfig

    def prepare(self) -> None:
        # the model first: RULER task files are counted in its tokens
        build_model(self.config)  # a model already at actor.path is served as is
        ensure_synthetic_eval(self.config)

    def single_controller(self) -> contextlib.AbstractContextManager[None]:
        return single_controller(self.config)

    @contextlib.contextmanager
    def servers(self) -> Iterator[list[str]]:
        log_file = Path(self.config.eval.output_dir) / "standin_server.log"
        with standin_server(self.config, log_file) as addr:
            yield [addr]

    def launches_servers(self) -> bool:
        # ``servers`` starts one unless standin.server_addr names a running one
        return super().launches_servers() or not self.config.standin.server_addr

    def scheduler_kwargs(self) -> dict[str, Any]:
        # A loaded 2-core machine starts workers slowly.
        return {"startup_timeout": self.config.standin.startup_timeout}

    def engine_class(self) -> type:
        return ENGINES[self.backend]

    def server_args(self, tp_size: int) -> dict[str, Any]:
        return launched_server_args(self.config, self.backend, tp_size)

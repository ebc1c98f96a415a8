"""The batch a step trains, told to the `QuestionLedger` it came from.

AReaL's trainer takes each step's batch with ``actor.prepare_batch(dataloader,
...)``: the actor's rollout engine pulls questions from the loader and returns
the first groups to finish. `MarksTrainedQuestions` is a mixin for the actor
(one-process SPMD runs) and its controller (AReaL's single controller) whose
``prepare_batch`` tells the ledger which questions the batch holds, and names
the servers when the ledger gives up waiting (`RolloutStalled`). Both classes
are in ``memagent_workflow/trainer/actor.py``.
"""

from __future__ import annotations

import os
from typing import Any

from memagent_workflow.recovery.ledger import QuestionLedger, RolloutStalled
from memagent_workflow.recovery.ledger_sync import mark_step
from memagent_workflow.rows import INDEX_KEY


def question_indices(batch: list[dict[str, Any]]) -> list[int]:
    """The ``question_index`` of each trajectory (one group = one question)."""
    out = []
    for traj in batch:
        value = traj.get(INDEX_KEY)
        if value is None:
            raise KeyError(
                f"a trajectory has no '{INDEX_KEY}' (keys {sorted(traj)}): the "
                "workflow must copy data['question_index'] into its rows"
            )
        if hasattr(value, "to_local"):  # single controller: a remote tensor
            value = value.to_local()
        out.append(int(value.reshape(-1)[0]) if hasattr(value, "reshape") else value)
    return out


def server_addresses(rollout: Any) -> list[str]:
    """The inference servers a rollout controller, or this SPMD process, uses."""
    infos = getattr(rollout, "server_infos", None) or []
    if infos:
        return [f"{i.host}:{i.port}" for i in infos]
    # RemoteSGLangEngine keeps the addresses it found (environment or
    # name_resolve) on the RemoteInfEngine it wraps.
    engine = getattr(rollout, "_engine", rollout)
    if getattr(engine, "addresses", None):
        return [str(a) for a in engine.addresses]
    # Where AReaL's launcher (and the CPU job) tells SPMD processes.
    return [a for a in os.environ.get("AREAL_LLM_SERVER_ADDRS", "").split(",") if a]


class MarksTrainedQuestions:
    """``prepare_batch`` that marks the batch's questions trained in the ledger."""

    def prepare_batch(self, dataloader: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            batch = super().prepare_batch(dataloader, *args, **kwargs)
        except RolloutStalled as exc:
            rollout = getattr(self, "rollout", None) or getattr(
                self, "rollout_engine", None
            )
            servers = ", ".join(server_addresses(rollout)) or "unknown"
            raise RolloutStalled(f"{exc} Servers: {servers}.") from None
        if isinstance(dataloader, QuestionLedger):
            mark_step(dataloader, question_indices(batch), self)
        return batch

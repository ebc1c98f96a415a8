"""The project's PPO actor with the pack-aware SDPA installed in its own process.

Under a single controller the actor runs in a worker process that AReaL's
scheduler starts and that imports this class by its path; the attention fix
must be installed there, not in the controller (see ``packed_sdpa``).
"""

from __future__ import annotations

from areal.api.cli_args import PPOActorConfig

from memagent_workflow.trainer.actor import MemAgentPPOActor
from standin.packed_sdpa import install_packed_sdpa


class StandinPPOActor(MemAgentPPOActor):
    """`MemAgentPPOActor` (AReaL's FSDP actor, resumable LR) for CPU runs: packed sequences stay apart under SDPA."""

    def __init__(self, config: PPOActorConfig):
        install_packed_sdpa()
        super().__init__(config)

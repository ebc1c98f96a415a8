"""What the AReaL under test can do, for the few tests whose subject differs
between AReaL releases (docs/areal-versions.md). Each is found out from the
installed AReaL (a module that exists, or how its code behaves), never from
its version string: AReaL's v2.0.0 tag and its main after it both say 2.0.0."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from unittest import mock

import areal
import pytest

from memagent_workflow.infra.ray_cluster import RAY_OVER_HTTP

# 1.0.4 and the v2.0.0 tag schedule Ray workers as Ray actors in placement
# groups, which runs on a CPU-only machine. AReaL's main after the tag rewrote
# RayScheduler over HTTP: it starts Ray itself and refuses a cluster without GPUs.
CPU_RAY = not RAY_OVER_HTTP

NO_CPU_RAY = pytest.mark.skipif(
    not CPU_RAY,
    reason=f"this AReaL ({areal.__version__}, RayScheduler over HTTP) refuses "
    "CPU-only clusters ('RayScheduler does not support CPU-only clusters'): the "
    "CPU Ray launch is checked on AReaL 1.0.4 and the v2.0.0 tag",
)


def versions_stamped_at_send() -> bool:
    """Whether ``agenerate`` stamps a reply's tokens with the weight version
    current when their request was sent (AReaL main after v2.0.0, #1569) rather
    than when the reply arrived (1.0.4, the v2.0.0 tag). Found out by running
    the installed ``RemoteInfEngine.agenerate`` on a reply during which the
    version moves from 10 to 11, as AReaL's own test of #1569 does."""
    from areal.api.io_struct import GenerationHyperparameters, ModelRequest
    from areal.infra import remote_inf_engine as rie

    engine = rie.RemoteInfEngine.__new__(rie.RemoteInfEngine)
    engine._version = 10
    engine.config = SimpleNamespace(
        use_lora=False, request_retries=1, request_timeout=1,
        return_routed_experts=False, enable_rollout_tracing=False,
        routing_strategy="round_robin",
    )  # fmt: skip
    engine.addresses, engine.rid_to_address, engine.rid_queue = ["h:1"], {}, []
    engine.server_idx = 0
    engine.workflow_executor = SimpleNamespace(is_paused=lambda: False)
    engine.get_version = lambda: engine._version

    def reply(_result):
        engine._version = 11  # a weight update lands while the request runs
        return SimpleNamespace(
            output_tokens=[1, 2], output_logprobs=[0.0, 0.0], stop_reason="stop",
            routed_experts=None,
        )  # fmt: skip

    engine.backend = SimpleNamespace(
        build_generation_request=lambda req, with_lora, version: SimpleNamespace(
            endpoint="/generate", payload={}, method="POST"
        ),
        parse_generation_response=reply,
    )
    req = ModelRequest(
        rid="probe", input_ids=[1], gconfig=GenerationHyperparameters(max_new_tokens=2)
    )
    with (
        mock.patch.object(rie, "arequest_with_retry", mock.AsyncMock(return_value={})),
        mock.patch.object(rie, "workflow_context") as context,
    ):
        context.get_aiohttp_session = mock.AsyncMock(return_value=None)
        versions = asyncio.run(engine.agenerate(req)).output_versions
    assert versions in ([10, 10], [11, 11]), versions
    return versions == [10, 10]

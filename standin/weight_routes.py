"""The stand-in's weight-update endpoints: from disk, and distributed (xccl).

``/update_weights_from_disk`` reloads an HF folder. ``/init_weights_update_group``
and ``/update_weights_from_distributed`` follow SGLang 0.5.10's request and reply
shapes (see ``standin.xccl``): the group join runs in a thread, since it blocks
until the trainer joins too, and each bucket is received in a thread and then
loaded into the model by the engine between generation steps. The helpers
(`load_from_disk`, `WeightGroups`) are shared with the vLLM routes
(``standin.vllm_routes``), which speak AReaL's vLLM extension over them.
``/weights_digest`` and ``/weights_checksum`` are stand-in only (for tests, both
protocols); ``/weights_digest`` also lists the loaded LoRA adapters' digests
(with ``--enable-lora``).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from aiohttp import web

from standin import xccl
from standin.engine import StandinEngine
from standin.model import weights_checksum, weights_digest
from standin.replies import fail, json_body, ok

logger = logging.getLogger("StandinServer")


async def load_from_disk(engine: StandinEngine, path: Any, abort: bool) -> str:
    """Reload the served weights from the HF folder ``path`` (``ValueError``
    if it is not one; the loader's error if the load fails)."""
    if not isinstance(path, str) or not (Path(path) / "config.json").is_file():
        raise ValueError(f"model_path {path!r} is not a HF model directory")
    msg = await asyncio.wrap_future(engine.update_weights(path, abort))
    logger.info(msg)
    return msg


class WeightGroups:
    """The process groups the server joined, by name, and their buckets."""

    def __init__(self, engine: StandinEngine) -> None:
        self.engine = engine
        self.groups: dict[str, xccl.WeightGroup] = {}

    async def join(self, name: str, **args: Any) -> None:
        """Join group ``name`` (leaving an older group of that name first)."""
        if name in self.groups:
            await asyncio.to_thread(xccl.leave_group, self.groups.pop(name))
        self.groups[name] = await asyncio.to_thread(
            xccl.join_group, group_name=name, **args
        )
        logger.info(f"joined weight-update group {name} as rank {args['rank']}")

    async def receive(
        self,
        name: str,
        names: list[str],
        dtypes: list[str],
        shapes: list[list[int]],
        abort: bool,
    ) -> str:
        """Receive one bucket over group ``name`` and load it between steps."""
        tensors = await asyncio.to_thread(
            xccl.receive_bucket, self.groups[name], names, dtypes, shapes
        )
        msg = await asyncio.wrap_future(self.engine.load_tensors(tensors, abort))
        logger.info(msg)
        return msg


def add_weight_routes(routes: web.RouteTableDef, engine: StandinEngine) -> None:
    """SGLang's weight-update endpoints."""
    groups = WeightGroups(engine)

    @routes.post("/update_weights_from_disk")
    async def update_from_disk(request: web.Request) -> web.Response:
        try:
            body = await json_body(request)
        except ValueError as e:
            return fail(400, str(e))
        path = body.get("model_path")
        abort = bool(body.get("abort_all_requests", False))
        try:
            msg = await load_from_disk(engine, path, abort)
        except ValueError as e:
            return fail(400, str(e))
        except Exception as e:
            return fail(400, f"failed to load weights from {path}: {e}")
        return ok(msg, num_paused_requests=0)

    @routes.post("/init_weights_update_group")
    async def init_group(request: web.Request) -> web.Response:
        try:
            body = await json_body(request)
            name = str(body.get("group_name", "weight_update_group"))
            args = dict(
                master_address=str(body["master_address"]),
                master_port=int(body["master_port"]),
                # SGLang: rank = rank_offset + the worker's TP rank (one worker here)
                rank=int(body["rank_offset"]),
                world_size=int(body["world_size"]),
                backend=str(body.get("backend", "nccl")),
            )
        except (ValueError, KeyError, TypeError) as e:
            return fail(400, f"bad init_weights_update_group request: {e!r}")
        try:
            await groups.join(name, **args)
        except Exception as e:
            return fail(400, f"Failed to initialize custom process group: {e}.")
        return ok("Succeeded to initialize custom process group.")

    @routes.post("/update_weights_from_distributed")
    async def update_distributed(request: web.Request) -> web.Response:
        try:
            body = await json_body(request)
            name = str(body.get("group_name", "weight_update_group"))
            names, dtypes = list(body["names"]), list(body["dtypes"])
            shapes = [list(s) for s in body["shapes"]]
        except (ValueError, KeyError, TypeError) as e:
            return fail(400, f"bad update_weights_from_distributed request: {e!r}")
        if name not in groups.groups:
            return fail(
                400,
                f"Group {name} not in {sorted(groups.groups)}. "
                "Please call `init_weights_update_group` first.",
            )
        if body.get("load_format") not in (None, "auto"):
            return fail(400, f"load_format {body['load_format']!r} is not supported")
        abort = bool(body.get("abort_all_requests", False))
        try:
            await groups.receive(name, names, dtypes, shapes, abort)
        except Exception as e:
            return fail(400, f"Failed to update parameter online: {e}.")
        return ok("Succeeded to update parameter online.")

    @routes.post("/update_weights_from_tensor")
    async def from_tensor(_: web.Request) -> web.Response:
        return fail(400, "update_weights_from_tensor is not served by the stand-in")


def add_probe_routes(routes: web.RouteTableDef, engine: StandinEngine) -> None:
    """Stand-in only: what the server serves, for tests (either protocol)."""

    @routes.get("/weights_checksum")
    async def checksum(_: web.Request) -> web.Response:
        value = await asyncio.wrap_future(
            engine.run_command(lambda: weights_checksum(engine.model))
        )
        return web.json_response(_info(engine, checksum=value))

    @routes.get("/weights_digest")
    async def digest(_: web.Request) -> web.Response:
        value = await asyncio.wrap_future(
            engine.run_command(lambda: weights_digest(engine.model))
        )
        if engine.lora is None or not engine.lora.enabled:
            return web.json_response(_info(engine, digest=value))
        # The base model's digest stays the warm start's under LoRA; each
        # loaded adapter's is its saved tensors' (standin.lora.adapter_digest).
        loaded = engine.lora.summary()["loaded"]
        adapters = {name: a["digest"] for name, a in loaded.items()}
        return web.json_response(_info(engine, digest=value, adapters=adapters))


def _info(engine: StandinEngine, **extra: object) -> dict[str, object]:
    return {"model_path": engine.model_path, "n_updates": engine.n_updates, **extra}

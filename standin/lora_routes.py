"""The stand-in server's LoRA side: flags, endpoints, and ``lora_path`` on ``/generate``.

SGLang 0.5.10's ``/load_lora_adapter`` and ``/unload_lora_adapter`` answer 200
with ``{success, error_message, loaded_adapters}`` or 400 with ``success:
false``; a ``/generate`` naming an adapter never loaded is a 400 with SGLang's
message, and one unloaded earlier is read again from its path (AReaL deletes
each pushed adapter's folder once loaded, so that fails, as on SGLang). The
adapters themselves: `standin.lora`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from typing import Any

import torch
from aiohttp import web

from standin.lora import Adapter, LoraAdapters
from standin.replies import json_body

logger = logging.getLogger("StandinServer")


async def adapter_of(engine: Any, lora_path: Any) -> Adapter | None:
    """The adapter a ``/generate`` body's ``lora_path`` names (None: the base
    model); held until ``engine.lora.release``."""
    if lora_path is None or lora_path == "":
        return None
    if not isinstance(lora_path, str):
        raise ValueError("lora_path must name one adapter (a string) on the stand-in")
    return await acquire_for_request(engine, lora_path)


async def acquire_for_request(engine: Any, name: str) -> Adapter:
    """The adapter ``/generate``'s ``lora_path`` names, as SGLang resolves it:
    one unloaded earlier is read again from its path; one never loaded, or
    unreadable now, is a ``ValueError`` (400)."""
    lora: LoraAdapters = engine.lora
    try:
        return lora.acquire(name)
    except KeyError:
        pass
    path = lora.path_of(name)
    if path is None:
        raise ValueError(lora.never_loaded(name))
    reply = await asyncio.wrap_future(engine.run_command(lambda: lora.load(name, path)))
    if not reply["success"] and "already loaded" not in reply["error_message"]:
        raise ValueError(
            f"Failed to implicitly load LoRA adapter {name}: {reply['error_message']}"
        )
    try:
        return lora.acquire(name)
    except KeyError:
        raise ValueError(lora.never_loaded(name)) from None


def add_routes(routes: Any, engine: Any) -> None:
    """``/load_lora_adapter`` and ``/unload_lora_adapter``: 200 with SGLang's
    ``{success, error_message, loaded_adapters}``, 400 with ``success: false``."""

    async def run(request: web.Request, load: bool) -> web.Response:
        try:
            body = await json_body(request)
            name = str(body["lora_name"])
            path = str(body["lora_path"]) if load else ""
        except (ValueError, KeyError) as e:
            return web.json_response(
                {"success": False, "error_message": repr(e)}, status=400
            )
        lora: LoraAdapters = engine.lora
        if load:
            pinned = bool(body.get("pinned", False))
            fn = lambda: lora.load(name, path, pinned)  # noqa: E731
        else:
            fn = lambda: lora.unload(name)  # noqa: E731
        reply = await asyncio.wrap_future(engine.run_command(fn))
        verb = "loaded" if load else "unloaded"
        said = "" if reply["success"] else f" refused: {reply['error_message']}"
        logger.info(f"LoRA adapter {name} {verb}{said}")
        if reply["success"] and load:
            # One adapter per weight update: the trainer's sync, as a disk load.
            engine.weights.record("lora", [name], ["float32"])
        return web.json_response(reply, status=200 if reply["success"] else 400)

    @routes.post("/load_lora_adapter")
    async def load_adapter(request: web.Request) -> web.Response:
        return await run(request, load=True)

    @routes.post("/unload_lora_adapter")
    async def unload_adapter(request: web.Request) -> web.Response:
        return await run(request, load=False)


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """SGLang's LoRA server flags the stand-in honours."""
    ap.add_argument("--enable-lora", action="store_true", help="serve LoRA adapters")
    ap.add_argument(
        "--lora-paths",
        nargs="*",
        default=None,
        help="adapters loaded at start: NAME=PATH or PATH (implies --enable-lora)",
    )
    ap.add_argument("--max-loaded-loras", type=int, default=None)
    ap.add_argument("--max-lora-rank", type=int, default=None)


def from_args(base: torch.nn.Module, args: argparse.Namespace) -> LoraAdapters:
    """The server's adapters as its flags configure them (none loaded yet)."""
    return LoraAdapters(
        base,
        enabled=bool(args.enable_lora or args.lora_paths),
        max_loaded=args.max_loaded_loras,
        max_rank=args.max_lora_rank,
    )


def preload(lora: LoraAdapters, specs: list[str] | None) -> None:
    """Load ``--lora-paths`` (``NAME=PATH``, or ``PATH`` named by itself)."""
    for spec in specs or []:
        name, _, path = spec.partition("=") if "=" in spec else (spec, "", spec)
        reply = lora.load(name, path, pinned=False)
        if not reply["success"]:
            raise SystemExit(f"--lora-paths {spec}: {reply['error_message']}")

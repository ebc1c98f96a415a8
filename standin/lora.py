"""LoRA adapters on the CPU stand-in, loaded, swapped and served as SGLang 0.5.10 does.

AReaL 1.0.4 trains LoRA with ``actor.use_lora`` and pushes the adapter after
every step from disk: the actor saves it (PEFT's ``adapter_config.json`` and
``adapter_model.safetensors``), the rollout engine posts ``/load_lora_adapter``
``{lora_name: NAME-vN, lora_path}`` and then ``/unload_lora_adapter`` for
``NAME-v(N-keep)``, and every ``/generate`` names its weight version's adapter
in ``lora_path``. A launched server gets the initial adapter as
``--lora-paths NAME-v0=PATH``.

`LoraAdapters` holds them. The served model is never changed: the adapters live
in a copy of its modules that shares its weights (a full weight update reaches
them too), wrapped by PEFT, and a decode step runs rows of different adapters
together (PEFT's mixed-batch forward; ``"__base__"`` for rows without one), as
SGLang batches requests for several adapters. Each load gets its own id
(SGLang's ``lora_id``): an adapter unloaded while requests still use it is
dropped when the last of them ends. Replies and messages are SGLang's.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import threading
import warnings
from collections import Counter, OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

BASE = "__base__"  # PEFT's name for "no adapter" in a mixed batch
NOT_ENABLED = "LoRA is not enabled. Please set `--enable-lora` to enable LoRA."


@dataclass
class Adapter:
    """One loaded adapter (SGLang's ``LoRARef`` plus its weights' digest)."""

    name: str
    path: str
    uid: str  # the adapter's name inside the PEFT copy, unique per load
    rank: int
    digest: str
    pinned: bool = False
    users: int = 0  # requests admitted with it and not yet answered


def tensors_digest(state: dict[str, torch.Tensor]) -> str:
    """sha256 over name-sorted tensors (name, shape, float32 bytes)."""
    h = hashlib.sha256()
    for name in sorted(state):
        t = state[name].detach().to(torch.float32).contiguous().cpu()
        h.update(f"{name}:{tuple(t.shape)};".encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()


def adapter_digest(path: str | Path) -> str:
    """The digest the stand-in reports for the adapter saved at ``path``."""
    from peft.utils import load_peft_weights

    return tensors_digest(load_peft_weights(str(path), device="cpu"))


def is_adapter(path: str | Path) -> bool:
    """A PEFT adapter folder (what AReaL saves for ``actor.use_lora``)."""
    return (Path(path) / "adapter_config.json").is_file()


class LoraAdapters:
    """The adapters a stand-in serves: name -> `Adapter`, in LRU order.

    ``load``, ``unload`` and ``forward`` run in the engine thread (between
    steps); ``acquire`` and ``release`` in the server's.
    """

    def __init__(
        self,
        base: torch.nn.Module,
        enabled: bool = False,
        max_loaded: int | None = None,
        max_rank: int | None = None,
    ) -> None:
        self.base, self.enabled = base, enabled
        self.max_loaded, self.max_rank = max_loaded, max_rank
        self._lock = threading.Lock()
        self._registry: OrderedDict[str, Adapter] = OrderedDict()
        self._ever: dict[str, Adapter] = {}  # SGLang's lora_ref_cache
        self._retired: list[Adapter] = []
        self._model: Any = None  # the PEFT copy, built at the first load
        self._uids = itertools.count()
        self.loads: list[dict[str, Any]] = []
        self.unloads: list[str] = []
        self.served: Counter[str] = Counter()

    def _reply(self, success: bool, message: str = "", listed: bool = True) -> dict:
        loaded = {a.name: a.path for a in self._registry.values()} if listed else None
        return {"success": success, "error_message": message, "loaded_adapters": loaded}

    # ---- engine thread ---------------------------------------------------
    def load(self, name: str, path: str, pinned: bool = False) -> dict[str, Any]:
        """``/load_lora_adapter``: read the adapter at ``path`` as ``name``."""
        if not self.enabled:
            return self._reply(False, NOT_ENABLED, listed=False)
        self._drop_retired()
        if name in self._registry:
            msg = f"Failed to load LoRA adapter {name} because it is already loaded"
            return self._reply(False, msg)
        try:
            adapter = self._add(name, path, pinned)
        except Exception as e:  # SGLang reports the loader's error as is
            return self._reply(False, str(e))
        with self._lock:
            self._registry[name] = self._ever[name] = adapter
        self.loads.append({"name": name, "path": path, "digest": adapter.digest})
        while self.max_loaded is not None and len(self._registry) > self.max_loaded:
            lru = next((a for a in self._registry.values() if not a.pinned), None)
            if lru is None:
                break
            self.unload(lru.name)
        return self._reply(True)

    def _add(self, name: str, path: str, pinned: bool) -> Adapter:
        from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
        from peft.utils import load_peft_weights

        config = LoraConfig.from_pretrained(path)
        if self.max_rank is not None and config.r > self.max_rank:
            raise ValueError(
                f"LoRA adapter {name} with rank {config.r} is incompatible with the "
                "current LoRA memory pool configuration. Please ensure that the LoRA "
                "adapter's rank is within the configured `--max-lora-rank` and that "
                "the target modules are included in `--lora-target-modules`."
            )
        state = load_peft_weights(path, device="cpu")
        uid = f"lora{next(self._uids)}"
        if self._model is None:
            # A copy of the served model's modules sharing its parameters and
            # buffers: PEFT wraps the copy's layers, the served model keeps its own.
            shared = {id(t): t for t in (*self.base.parameters(), *self.base.buffers())}
            self._model = get_peft_model(
                copy.deepcopy(self.base, memo=shared), config, adapter_name=uid
            )
        else:
            self._model.add_adapter(uid, config)
        result = set_peft_model_state_dict(self._model, state, adapter_name=uid)
        if result.unexpected_keys:
            self._delete(uid)
            raise ValueError(
                f"LoRA adapter {name} has weights for modules the model lacks: "
                f"{sorted(result.unexpected_keys)[:4]}"
            )
        # PEFT applies ``adapter_names`` only while its active adapter exists.
        self._model.set_adapter(uid)
        self._model.eval().requires_grad_(False)
        return Adapter(name, path, uid, int(config.r), tensors_digest(state), pinned)

    def unload(self, name: str) -> dict[str, Any]:
        """``/unload_lora_adapter``: no new request may name it; its weights go
        once the requests that named it are answered."""
        if not self.enabled:
            return self._reply(False, NOT_ENABLED, listed=False)
        with self._lock:
            adapter = self._registry.pop(name, None)
            if adapter is None:
                keys = self._registry.keys()
                msg = f"LoRA with name {name} does not exist. Loaded LoRAs: {keys}"
                return self._reply(False, msg, listed=False)
            self._retired.append(adapter)
        self.unloads.append(name)
        self._drop_retired()
        return self._reply(True)

    def _drop_retired(self) -> None:
        with self._lock:
            done = [a for a in self._retired if a.users == 0]
            self._retired = [a for a in self._retired if a.users > 0]
        for adapter in done:
            self._delete(adapter.uid)

    def _delete(self, uid: str) -> None:
        with warnings.catch_warnings():  # "the active adapter was deleted"
            warnings.simplefilter("ignore")
            self._model.delete_adapter(uid)
        if self._model.peft_config:
            self._model.set_adapter(next(iter(self._model.peft_config)))

    def forward(self, rows: list[Any], **kwargs: Any) -> Any:
        """The model on ``rows`` (requests), each through the adapter it named."""
        names = [r.lora.uid if r.lora is not None else BASE for r in rows]
        if all(n == BASE for n in names):
            return self.base(**kwargs)
        return self._model(**kwargs, adapter_names=names)

    # ---- server thread ---------------------------------------------------
    def acquire(self, name: str) -> Adapter:
        """The adapter a ``/generate`` names, held until `release`."""
        with self._lock:
            if not self.enabled:
                raise ValueError(
                    f"LoRA adapter '{name}' was requested, but LoRA is not enabled. "
                    "Please launch the server with --enable-lora flag and preload "
                    "adapters using --lora-paths or /load_lora_adapter endpoint."
                )
            adapter = self._registry.get(name)
            if adapter is None:
                raise KeyError(name)
            self._registry.move_to_end(name)
            adapter.users += 1
            self.served[name] += 1
            return adapter

    def release(self, adapter: Adapter) -> None:
        with self._lock:
            adapter.users -= 1

    def never_loaded(self, name: str) -> str:
        return (
            f"Got LoRA adapter that has never been loaded: {name}\n"
            f"All loaded adapters: {self._ever.keys()}."
        )

    def path_of(self, name: str) -> str | None:
        """Where an adapter loaded before was read from (None: never loaded)."""
        adapter = self._ever.get(name)
        return None if adapter is None else adapter.path

    def summary(self) -> dict[str, Any]:
        """Stand-in only: what is loaded, what was loaded and unloaded, and how
        many requests each adapter answered."""
        with self._lock:
            loaded = {
                a.name: {"path": a.path, "rank": a.rank, "digest": a.digest}
                for a in self._registry.values()
            }
        return {
            "enabled": self.enabled,
            "loaded": loaded,
            "loads": list(self.loads),
            "unloads": list(self.unloads),
            "served": dict(self.served),
        }


def load_adapter(addresses: list[str], name: str, path: str) -> None:
    """``/load_lora_adapter`` on every server at ``addresses`` (host:port), as
    AReaL's disk weight update posts it; raise with the reply of a refusal."""
    import json
    import urllib.error
    import urllib.request

    body = json.dumps({"lora_name": name, "lora_path": path}).encode()
    for addr in addresses:
        req = urllib.request.Request(
            f"http://{addr}/load_lora_adapter",
            data=body,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                r.read()
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"{addr} refused adapter {name}: {e.read()!r}") from e


def merge_adapter(adapter: Path, base: Path, out: Path) -> Path:
    """The adapter at ``adapter`` merged into the model at ``base``, written to
    ``out`` with ``base``'s tokenizer: an HF model the eval entry serves as is
    (AReaL saves a LoRA run's checkpoints as adapters)."""
    import shutil

    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from standin.build_cache import MARKER_FILE

    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    merged = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for f in base.iterdir():  # tokenizer, chat template, generation config
        if f.is_file() and f.suffix in (".json", ".jinja") and f.name != MARKER_FILE:
            shutil.copy2(f, out / f.name)
    merged.save_pretrained(str(out))
    return out

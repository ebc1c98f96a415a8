"""The model's shape from its ``config.json``: parameter count and KV bytes.

The file is read from a local model folder or the Hugging Face hub cache; it is
downloaded only when the user allows it. The count covers dense decoder-only
models (Qwen2/2.5/3, Llama-style): embeddings, attention (with Qwen2's q/k/v
biases, Qwen3's per-head q/k RMS norms and its explicit ``head_dim``), a gated
MLP, RMS norms and an LM head (counted once when tied to the embeddings).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_BIASED_QKV = {"qwen2", "qwen2_moe"}  # model types with q/k/v biases by default
_QK_NORM = {"qwen3"}  # model types with an RMS norm on each head's q and k


@dataclass(frozen=True)
class ModelShape:
    """What the memory estimates need from ``config.json``."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied_embeddings: bool
    qkv_bias: bool
    qk_norm: bool = False
    source: str = ""

    @classmethod
    def from_config(cls, cfg: dict[str, Any], source: str = "") -> ModelShape:
        cfg = cfg.get("text_config", cfg)  # multimodal wrappers keep the LM inside
        if "num_experts" in cfg or "num_local_experts" in cfg:
            raise ValueError(f"{source}: a mixture-of-experts model is not modelled")
        heads = cfg["num_attention_heads"]
        hidden = cfg["hidden_size"]
        return cls(
            hidden=hidden,
            layers=cfg["num_hidden_layers"],
            heads=heads,
            kv_heads=cfg.get("num_key_value_heads") or heads,
            head_dim=cfg.get("head_dim") or hidden // heads,
            intermediate=cfg["intermediate_size"],
            vocab=cfg["vocab_size"],
            tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
            qkv_bias=bool(
                cfg.get("attention_bias", cfg.get("model_type") in _BIASED_QKV)
            ),
            qk_norm=cfg.get("model_type") in _QK_NORM,
            source=source,
        )

    @property
    def q_width(self) -> int:
        """Width of the queries: heads x head_dim (Qwen3-4B: 4096, not hidden)."""
        return self.heads * self.head_dim

    def _layer_matmul(self) -> int:
        h, q, kv = self.hidden, self.q_width, self.kv_heads * self.head_dim
        return h * q + 2 * h * kv + q * h + 3 * h * self.intermediate

    @property
    def params(self) -> int:
        """Parameters, counted layer by layer."""
        q, kv = self.q_width, self.kv_heads * self.head_dim
        layer = self._layer_matmul() + 2 * self.hidden  # two RMS norms
        if self.qkv_bias:
            layer += q + 2 * kv
        if self.qk_norm:
            layer += 2 * self.head_dim
        embeddings = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        return self.layers * layer + embeddings + self.hidden  # final norm

    @property
    def matmul_params(self) -> int:
        """Weights a token multiplies through: every layer's and the LM head
        (tied or not); the embedding lookup costs no FLOPs."""
        return self.layers * self._layer_matmul() + self.vocab * self.hidden

    def forward_flops(self, seq_tokens: int) -> float:
        """FLOPs of one token's forward pass in a causal sequence of
        ``seq_tokens``: 2 per weight, and the attention scores and mix over
        half the sequence on average."""
        attention = 2 * self.layers * seq_tokens * self.q_width
        return 2.0 * self.matmul_params + attention

    def kv_bytes_per_token(self, tp: int = 1, dtype_bytes: int = 2) -> int:
        """K and V of every layer for one token on one of ``tp`` GPUs."""
        kv_heads = max(1, self.kv_heads // tp)  # replicated when fewer than tp
        return 2 * self.layers * kv_heads * self.head_dim * dtype_bytes


def _is_hub_id(path: str) -> bool:
    return path.count("/") == 1 and not path.startswith((".", "/", "~"))


def find_model_config(
    path: str, allow_download: bool = False
) -> tuple[ModelShape | None, str]:
    """The shape of the model at ``path`` (a folder or a hub id), or None and why."""
    local = Path(path).expanduser() / "config.json"
    if local.is_file():
        where = str(local)
    elif _is_hub_id(path):
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(path, "config.json")
        if isinstance(cached, str):
            where = cached
        elif allow_download:
            from huggingface_hub import hf_hub_download

            try:
                where = hf_hub_download(path, "config.json")
            except Exception as exc:  # network, auth, unknown repo
                return None, f"download of {path}/config.json failed: {exc}"
        else:
            return None, f"{path}: no config.json here or in the hub cache"
    else:
        return None, f"{path}: no config.json there"
    try:
        return ModelShape.from_config(json.loads(Path(where).read_text()), where), where
    except (OSError, ValueError, KeyError) as exc:
        return None, f"{where}: cannot read the model's shape: {exc}"


def in_hub_cache(path: str, names: tuple[str, ...]) -> bool:
    """Whether one of the files ``names`` of hub model ``path`` is cached here."""
    if not _is_hub_id(path):
        return False
    from huggingface_hub import try_to_load_from_cache

    return any(isinstance(try_to_load_from_cache(path, n), str) for n in names)


def weights_local(path: str) -> bool:
    """Whether the model's weights are on this machine (a folder or the hub cache)."""
    folder = Path(path).expanduser()
    if folder.is_dir():
        return any(folder.glob("*.safetensors")) or any(folder.glob("*.bin"))
    return in_hub_cache(path, ("model.safetensors.index.json", "model.safetensors"))


def tokenizer_local(path: str) -> bool:
    """Whether the tokenizer at ``path`` loads without the network."""
    if Path(path).expanduser().is_dir():
        return True
    return in_hub_cache(path, ("tokenizer.json", "tokenizer_config.json"))

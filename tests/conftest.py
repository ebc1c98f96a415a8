"""Shared fixtures: the tiny offline model and the CPU stand-in SGLang server."""

import os

os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Qwen2 model + tokenizer (seed 0), built once per session."""
    from memagent_workflow.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


@pytest.fixture(scope="session")
def local_server(
    tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator:
    """A running CPU stand-in server on ``tiny_model_dir`` (a ``LocalServer``).

    Tests that pause it or load other weights must restore it before returning.
    """
    from memagent_workflow.local_launch import LocalServer

    log_file = tmp_path_factory.mktemp("local_server") / "server.log"
    with LocalServer(tiny_model_dir, seed=0, log_file=log_file) as server:
        yield server

"""Shared fixtures: the tiny offline model and its tokenizer, the Qwen2.5
tokenizer, and the CPU stand-in SGLang server."""

import os

os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# One intra-op thread in every process the tests start (inherited): the suite
# runs a dozen processes at once on a few cores, where a second OpenMP thread per
# process only spins waiting for work. The needle model's build sets its own.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# The suite runs in the environment its own `uv run --locked` just synced: the docs'
# commands it runs as written (`uv run python ...`) need not sync it again, which
# re-checks every compiled file of it (compile-bytecode: 2.5 s, 5 CPU-seconds each).
os.environ.setdefault("UV_NO_SYNC", "1")
# Ray 2.60 reads its auth mode when it is first imported: the CPU entries' choice
# (standin/__init__.py) must be set before anything in the tests imports ray.
os.environ.setdefault("RAY_AUTH_MODE", "token")

from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from tests.fresh_home import use_fresh_home  # noqa: E402
from tests.runs_alone import file_lock, wants_alone  # noqa: E402
from tests.tiers import FULL_COMMAND, FULL_TIER, left_out, start_order  # noqa: E402

# Every test process (and all it starts) sees a new user's machine: no
# ~/.ray/auth_token, no ~/.cache/huggingface (tests/fresh_home.py).
use_fresh_home()


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker more than the cores (at most 8): the end-to-end files
    spend much of their time waiting on processes they start (imports, servers,
    workers), and one more file in flight keeps the cores busy meanwhile."""
    return min(8, (os.cpu_count() or 1) + 1)


def shared_dir(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder of this session that every pytest-xdist worker sees (the
    session's base temp folder is per worker; its parent is the run's).

    With ``MEMAGENT_TEST_BUILDS`` set, a folder there instead: ``.ci/run`` sets
    it so that the full tier reuses the quick tier's model builds (one clone,
    one code: a build is reused only while its key matches, as ever)."""
    if builds := os.environ.get("MEMAGENT_TEST_BUILDS"):
        return Path(builds) / name
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name


@pytest.fixture(scope="module", autouse=True)
def runs_alone(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[None]:
    """A file that sets ``RUNS_ALONE = True`` (one that compares timings) runs
    with no other file of the run in flight; the others share (tests/runs_alone.py)."""
    alone = wants_alone(request.module)
    with file_lock(shared_dir(tmp_path_factory, "runs_alone"), alone):
        yield


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Qwen2 model + tokenizer (seed 0), built once per run (the
    build is shared by the workers: one builds, the others wait for it)."""
    from standin.tiny_model import build_tiny_model

    return build_tiny_model(shared_dir(tmp_path_factory, "tiny_model"), seed=0)


@pytest.fixture(scope="session")
def needle_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CPU main job's warm-started needle model (config_cpu.yaml's build),
    built once per run (shared like ``tiny_model_dir``). Tests copy it before
    training it."""
    from standin.cpu_job import build_model
    from standin.train import load_config

    out = shared_dir(tmp_path_factory, "needle_model")
    build_model(load_config(["--config", "config_cpu.yaml", f"actor.path={out}"]))
    return out


@pytest.fixture(scope="session")
def tokenizer(tiny_model_dir: Path):
    """The tiny model's tokenizer (Qwen2's chat template, a small BPE vocabulary)."""
    from memagent_workflow.workflow import load_tokenizer

    return load_tokenizer(str(tiny_model_dir))


@pytest.fixture(scope="session")
def qwen_tokenizer():
    """The real Qwen2.5 tokenizer, built offline (tests/qwen_vocab.py)."""
    from tests.qwen_vocab import qwen25_tokenizer

    return qwen25_tokenizer()


@pytest.fixture(scope="session")
def qwen3_tokenizer():
    """A hybrid-thinking Qwen3 tokenizer (Qwen3-4B's vocabulary and chat format,
    ``enable_thinking`` honoured), built offline (tests/qwen_vocab.py)."""
    from tests.qwen_vocab import qwen3_tokenizer

    return qwen3_tokenizer()


@pytest.fixture(scope="session")
def qwen3_instruct_tokenizer():
    """A non-thinking Qwen3 tokenizer (Qwen3-4B-Instruct-2507's format: no think
    block), built offline (tests/qwen_vocab.py)."""
    from tests.qwen_vocab import QWEN3_INSTRUCT_2507_TEMPLATE, qwen3_tokenizer

    return qwen3_tokenizer(QWEN3_INSTRUCT_2507_TEMPLATE)


@pytest.fixture(scope="session")
def standin_server(
    tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator:
    """A running CPU stand-in server on ``tiny_model_dir`` (a ``StandinServer``).

    Tests that pause it or load other weights must restore it before returning.
    """
    from standin.launch import StandinServer

    log_file = tmp_path_factory.mktemp("standin_server") / "server.log"
    with StandinServer(tiny_model_dir, seed=0, log_file=log_file) as server:
        yield server


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m selection
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Mark each test with its layer, the folder it lives in (unit/integration/e2e),
    and its tier (``full``: tests/tiers.py); leave the full tier out unless asked
    for; start the files in ``start_order`` (the order within a file is kept)."""
    for item in items:
        if item.path.parent.name in ("unit", "integration", "e2e"):
            item.add_marker(getattr(pytest.mark, item.path.parent.name))
        if item.path.name in FULL_TIER:
            item.add_marker(pytest.mark.full)
    files = list(dict.fromkeys(item.path.name for item in items))
    named = {Path(arg.split("::")[0]).name for arg in config.args}
    dropped = left_out(files, config.option.markexpr, named)
    if dropped:
        config.hook.pytest_deselected(
            items=[item for item in items if item.path.name in dropped]
        )
        items[:] = [item for item in items if item.path.name not in dropped]
    users = {
        item.path.name
        for item in items
        if "needle_model_dir" in getattr(item, "fixturenames", ())
    }
    alone = frozenset(
        item.path.name for item in items if wants_alone(getattr(item, "module", None))
    )
    order = start_order([f for f in files if f not in dropped], users, alone)
    rank = {name: i for i, name in enumerate(order)}
    items.sort(key=lambda item: rank[item.path.name])


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """Say that the full tier was left out, and how to run it."""
    if config.option.markexpr or hasattr(config, "workerinput"):
        return
    if any(Path(arg.split("::")[0]).is_dir() for arg in config.args):
        terminalreporter.write_line(
            f"the full tier (tests/tiers.py) was left out; CI runs it: {FULL_COMMAND}"
        )

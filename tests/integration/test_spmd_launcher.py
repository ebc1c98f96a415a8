"""AReaL's SPMD launcher (``python3 -m areal.infra.launcher.local``) with the
docs' commands, as far as CPU allows: the folders it requires, the processes it
would start (recorded instead of started: they need GPUs and SGLang), and the
server addresses ``examples/eval.py`` then reads."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest
from areal.api.cli_args import ClusterSpecConfig, parse_cli_args, to_structured_cfg
from areal.infra.launcher import local as launcher
from areal.infra.utils.launcher import validate_config_for_launcher
from areal.utils import name_resolve, names

from examples import shared_folders
from examples.eval import load_config as load_eval_config
from memagent_workflow.eval.engine import ClusterInference, open_engine
from memagent_workflow.recovery.batches import server_addresses

ROOT = Path(__file__).resolve().parents[2]
MODULE = ["python3", "-m", "areal.infra.launcher.local"]
PRE_STEP = ["python3", "examples/shared_folders.py"]


def doc_commands(page: str) -> list[list[str]]:
    """Every command of every bash block of ``docs/{page}`` (comments dropped)."""
    text = (ROOT / "docs" / page).read_text()
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                out.append(shlex.split(line))
    return out


def launch_args(page: str, script: str) -> list[str]:
    """The launcher's arguments in the docs' SGLang launcher command for
    ``script`` (the vLLM one needs vLLM: tests/unit/test_gpu_docs_vllm.py)."""
    (cmd,) = [
        c
        for c in doc_commands(page)
        if c[:4] == [*MODULE, script] and not any("vllm" in a for a in c)
    ]
    return cmd[3:]


def pre_step_args(page: str, config: str) -> list[str]:
    (cmd,) = [c for c in doc_commands(page) if c[:2] == PRE_STEP and config in c]
    return cmd[2:]


def into(tmp_path: Path) -> list[str]:
    """Overrides that keep a test's shared folders in ``tmp_path``."""
    return [
        f"cluster.fileroot={tmp_path / 'areal'}",
        f"cluster.name_resolve.nfs_record_root={tmp_path / 'name_resolve'}",
    ]


@pytest.fixture(autouse=True)
def from_the_repository_root(monkeypatch):
    """The docs' commands run from the repository root."""
    monkeypatch.chdir(ROOT)


@pytest.fixture
def own_name_resolve(monkeypatch):
    """AReaL's name_resolve as it was before the test (configs reconfigure it)."""
    for attr in ("DEFAULT_REPOSITORY", "add", "add_subentry", "delete",
                 "clear_subtree", "get", "get_subtree", "find_subtree", "wait",
                 "reset", "watch_names"):  # fmt: skip
        monkeypatch.setattr(name_resolve, attr, getattr(name_resolve, attr))


@pytest.mark.parametrize(
    "page, script, config",
    [
        ("gpu-launch.md", "examples/train.py", "config.yaml"),
        ("eval.md", "examples/eval.py", "config_eval.yaml"),
    ],
)
def test_the_pre_step_makes_the_folders_the_launcher_requires(
    page, script, config, tmp_path
):
    args = launch_args(page, script) + into(tmp_path)
    parsed, _ = parse_cli_args(args)
    parsed.cluster = to_structured_cfg(parsed.cluster, ClusterSpecConfig)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        validate_config_for_launcher(parsed)  # a fresh node
    made = shared_folders.main(pre_step_args(page, config) + into(tmp_path))
    assert made == [str(tmp_path / "areal"), str(tmp_path / "name_resolve")]
    validate_config_for_launcher(parsed)


@pytest.mark.parametrize(
    "page, script, n_train",
    [("gpu-launch.md", "examples/train.py", 4), ("eval.md", "examples/eval.py", 1)],
)
def test_the_launcher_starts_sglang_then_the_script_with_its_addresses(
    page, script, n_train, tmp_path, monkeypatch, own_name_resolve
):
    args = launch_args(page, script) + into(tmp_path)
    shared_folders.main(args)
    jobs = []
    monkeypatch.setattr(
        launcher.LocalLauncher,
        "submit_array",
        lambda self, job_name, cmd, count=1, gpu=0, env_vars=None: jobs.append(
            (job_name, cmd, gpu, dict(env_vars or {}))
        ),
    )
    monkeypatch.setattr(launcher.LocalLauncher, "wait", lambda self, **kw: None)
    servers = [f"10.0.0.{i}:30000" for i in range(4)]
    monkeypatch.setattr(
        launcher,
        "wait_llm_server_addrs",
        lambda exp, trial, n_rollout_servers: servers[:n_rollout_servers],
    )
    monkeypatch.setattr(sys, "argv", ["areal.infra.launcher.local", *args])
    launcher.main()

    (server, gpus, _), (trainer, train_gpus, env) = [j[1:] for j in jobs]
    assert [j[0] for j in jobs] == ["llm_server", "trainer"]
    assert server == (
        f"python3 -m areal.infra.launcher.sglang_server {' '.join(args)} "
        "sglang.random_seed=1"
    )
    assert gpus == n_train  # as many SGLang GPUs as training ones in both
    assert trainer.startswith(f"torchrun --nnodes 1 --nproc-per-node {n_train} ")
    assert trainer.endswith(" ".join(args)) and train_gpus == n_train
    assert env["AREAL_LLM_SERVER_ADDRS"] == ",".join(servers[:n_train])
    assert env["AREAL_SPMD_MODE"] == "1"


def test_the_eval_server_config_parses_as_the_server_wrapper_reads_it(tmp_path):
    # areal.infra.launcher.sglang_server reads these sections of the same argv
    # (building SGLang's command itself needs the sglang package: GPU only).
    from areal.api.cli_args import InferenceEngineConfig, SGLangConfig

    config, _ = parse_cli_args(launch_args("eval.md", "examples/eval.py"))
    config.sglang = to_structured_cfg(config.sglang, SGLangConfig)
    config.rollout = to_structured_cfg(config.rollout, InferenceEngineConfig)
    assert config.sglang.model_path == "Qwen/Qwen2.5-7B-Instruct"
    assert config.sglang.context_length == config.gconfig.max_tokens
    assert config.rollout.experiment_name == config.experiment_name


def eval_config(tmp_path: Path, model: Path):
    args = launch_args("eval.md", "examples/eval.py")
    return load_eval_config([*args, *into(tmp_path), f"actor.path={model}"])


def test_the_eval_script_uses_the_addresses_the_launcher_passes(
    standin_server, tiny_model_dir, tmp_path, monkeypatch, own_name_resolve
):
    monkeypatch.setenv("AREAL_LLM_SERVER_ADDRS", standin_server.addr)
    monkeypatch.setenv("AREAL_SPMD_MODE", "1")
    config = eval_config(tmp_path, tiny_model_dir)
    assert config.scheduler.type is None  # the launcher's script starts no server
    with open_engine(config, ClusterInference(config)) as engine:
        assert server_addresses(engine) == [standin_server.addr]


def test_without_the_variable_the_script_finds_the_servers_in_name_resolve(
    standin_server, tiny_model_dir, tmp_path, monkeypatch, own_name_resolve
):
    # `allocation_mode=sglang:d1` alone: the launcher starts and registers the
    # servers only; `examples/eval.py` run beside it finds them there.
    monkeypatch.delenv("AREAL_LLM_SERVER_ADDRS", raising=False)
    config = eval_config(tmp_path, tiny_model_dir)
    key = names.gen_servers(config.experiment_name, config.trial_name)
    name_resolve.add_subentry(key, standin_server.addr)
    with open_engine(config, ClusterInference(config)) as engine:
        assert server_addresses(engine) == [standin_server.addr]

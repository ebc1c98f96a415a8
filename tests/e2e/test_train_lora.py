"""docs/lora.md's CPU LoRA command, 2 steps in one process: every step's adapter
reaches the stand-in, and the stand-in answers the next step's rollouts with it.

The command is read from docs/lora.md and run as written, shortened the way
``launch_runs.run_one_process`` shortens config_cpu.yaml's runs (one-process
SPMD mode, 2 steps, a server the test owns) and with a smaller batch. AReaL's
FSDP actor trains the adapter with PEFT and pushes it from disk after every step
(``/load_lora_adapter`` as ``NAME-vN``, ``/unload_lora_adapter`` for versions
past ``lora_keep_versions``); the stand-in's ``lora`` report (stand-in only)
says which adapters it loaded and how many requests each answered. Were the push
skipped, the loads would stop at v0 and step 2's requests for v1 would fail.
"""

from __future__ import annotations

import json
import shutil
import urllib.request

import pytest
import torch
from areal.api.cli_args import GenerationHyperparameters
from areal.api.io_struct import get_versioned_lora_name
from transformers import AutoModelForCausalLM

from bench.lora import lora_overrides
from standin.launch import StandinServer
from standin.lora import adapter_digest
from standin.model import weights_digest
from tests.e2e.launch_runs import run_one_process

# Fewer questions and episodes than the docs' run: the test checks the pushes.
SMALLER = (
    "train_dataset.batch_size=2",
    "memagent.group_size=4",
    "standin.synthetic_train=4",
    "standin.synthetic_valid=2",
    # every step with a learning rate changes the adapter, even if all groups tie
    "actor.optimizer.weight_decay=0.01",
)


def lora_name(overrides: list[str]) -> str:
    given = [
        o.split("=", 1)[1] for o in overrides if o.startswith("gconfig.lora_name=")
    ]
    return given[-1] if given else GenerationHyperparameters().lora_name


def get(server: StandinServer, path: str) -> dict:
    with urllib.request.urlopen(f"{server.url}{path}", timeout=30) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def run(needle_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("train_lora")
    model = out / "model"
    shutil.copytree(needle_model_dir, model)
    base = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32)
    initial = weights_digest(base)
    overrides = lora_overrides()
    # AReaL launches SGLang with LoRA enabled for a LoRA run; so is this server.
    args = ["--skip-tokenizer-init", "--enable-lora"]
    with StandinServer(model, log_file=out / "server.log", extra_args=args) as server:
        run_one_process(
            ["-m", "standin.train"], out, model, server.addr, *overrides, *SMALLER
        )
        info, digest = get(server, "/get_server_info"), get(server, "/weights_digest")
    steps = [
        json.loads(line)
        for line in next((out / "areal").rglob("steps.jsonl")).read_text().splitlines()
    ]
    # the saver's checkpoint after the last step (not the initial adapter's folder)
    saved = next(
        p.parent
        for p in (out / "areal").rglob("checkpoints/**/adapter_config.json")
        if "globalstep" in p.parent.name
    )
    versions = [get_versioned_lora_name(lora_name(overrides), v) for v in range(3)]
    return dict(
        initial=initial, lora=info["lora"], digest=digest, steps=steps,
        saved=saved, versions=versions,
    )  # fmt: skip


def test_the_docs_command_trains_lora(run):
    assert [s["step"] for s in run["steps"]] == [1, 2]
    assert all(s["rows"] > 0 for s in run["steps"])


def test_an_adapter_is_pushed_after_every_step(run):
    # v0: the initial adapter, then one push per step
    assert [load["name"] for load in run["lora"]["loads"]] == run["versions"]
    first, *_, last = [load["digest"] for load in run["lora"]["loads"]]
    assert last != first  # step 1's learning rate is 0 (warm-up); step 2's is not


def test_each_step_is_answered_by_the_adapter_of_its_version(run):
    v0, v1, _ = run["versions"]
    first, second = run["steps"]
    assert first["oldest_rollout_version"] == 0 and run["lora"]["served"][v0] > 0
    assert second["oldest_rollout_version"] == 1 and run["lora"]["served"][v1] > 0


def test_the_last_adapter_pushed_is_the_one_the_actor_saved(run):
    assert run["lora"]["loads"][-1]["digest"] == adapter_digest(run["saved"])
    assert run["digest"]["adapters"][run["versions"][-1]] == adapter_digest(
        run["saved"]
    )


def test_old_versions_are_unloaded_and_the_base_weights_kept(run):
    # max_head_offpolicyness=0: AReaL keeps 2 versions, so v0 goes at v2
    assert run["lora"]["unloads"] == run["versions"][:1]
    assert sorted(run["lora"]["loaded"]) == run["versions"][1:]
    assert run["digest"]["digest"] == run["initial"]

"""The stand-in serves LoRA adapters as SGLang 0.5.10.post1 does for AReaL's LoRA runs.

AReaL 1.0.4 (``areal/engine/sglang_remote.py``) pushes each step's adapter with
``/load_lora_adapter`` as ``NAME-vN``, unloads ``NAME-v(N-keep)`` (best effort),
deletes the adapter's folder once loaded, and names ``NAME-vVERSION`` in every
``/generate``'s ``lora_path``. The requests here are built by AReaL's own
`SGLangBackend`. ``/weights_digest``'s ``adapters`` and ``/get_server_info``'s
``lora`` are stand-in only.
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from areal.api.cli_args import GenerationHyperparameters
from areal.api.io_struct import ModelRequest, WeightUpdateMeta
from areal.engine.sglang_remote import SGLangBackend
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import AutoModelForCausalLM

from standin.launch import StandinServer
from standin.lora import adapter_digest
from tests.http import call

PROMPT = [3, 4, 5, 6, 7, 8, 9, 10]
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def save_adapter(model_dir, out, seed: int) -> str:
    """A random (non-zero) rank-4 adapter on every linear layer, saved by PEFT."""
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    config = LoraConfig(
        r=4, lora_alpha=8, target_modules=TARGETS, init_lora_weights=False
    )
    get_peft_model(model, config).save_pretrained(out)
    return str(out)


def prompt_logprobs(server, lora_path=None) -> list[float]:
    """The served model's logprob of each prompt token after the first."""
    body = {
        "input_ids": PROMPT,
        "sampling_params": {"max_new_tokens": 1},
        "return_logprob": True,
        "logprob_start_len": 0,
    }
    if lora_path is not None:
        body["lora_path"] = lora_path
    status, out = call(server, "/generate", body)
    assert status == 200, out
    return [row[0] for row in out["meta_info"]["input_token_logprobs"][1:]]


def reference_logprobs(model_dir, adapter: str | None) -> list[float]:
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    if adapter is not None:
        model = PeftModel.from_pretrained(model, adapter)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([PROMPT])).logits[0, :-1]
    logp = torch.log_softmax(logits.float(), dim=-1)
    return logp.gather(1, torch.tensor(PROMPT[1:])[:, None])[:, 0].tolist()


@pytest.fixture(scope="module")
def adapters(needle_model_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("adapters")
    return {s: save_adapter(needle_model_dir, folder / f"a{s}", s) for s in (1, 2)}


@pytest.fixture(scope="module")
def server(needle_model_dir, tmp_path_factory):
    """As AReaL launches SGLang for a LoRA run: no tokenizer, LoRA enabled."""
    log = tmp_path_factory.mktemp("lora") / "server.log"
    args = ["--skip-tokenizer-init", "--enable-lora"]
    with StandinServer(needle_model_dir, log_file=log, extra_args=args) as s:
        yield s


def test_load_answers_with_sglang_reply_and_serves_the_adapter(
    server, adapters, needle_model_dir
):
    base_digest = call(server, "/weights_digest")[1]["digest"]
    status, out = call(
        server, "/load_lora_adapter", {"lora_name": "a", "lora_path": adapters[1]}
    )
    assert status == 200
    assert out == {
        "success": True,
        "error_message": "",
        "loaded_adapters": {"a": adapters[1]},
    }
    served = prompt_logprobs(server, "a")
    base = prompt_logprobs(server)
    assert served == pytest.approx(
        reference_logprobs(needle_model_dir, adapters[1]), abs=1e-4
    )
    assert base == pytest.approx(reference_logprobs(needle_model_dir, None), abs=1e-4)
    assert max(abs(x - y) for x, y in zip(served, base, strict=True)) > 1e-2
    digest = call(server, "/weights_digest")[1]
    assert digest["digest"] == base_digest  # the base weights are untouched
    assert digest["adapters"] == {"a": adapter_digest(adapters[1])}
    assert call(server, "/unload_lora_adapter", {"lora_name": "a"})[0] == 200


def greedy(server, lora_path=None) -> tuple[list[int], list[float]]:
    """Six greedy tokens (decode steps, batched with whatever else runs)."""
    body = {
        "input_ids": PROMPT,
        "sampling_params": {
            "max_new_tokens": 6,
            "temperature": 0.0,
            "ignore_eos": True,
        },
        "return_logprob": True,
    }
    if lora_path is not None:
        body["lora_path"] = lora_path
    status, out = call(server, "/generate", body)
    assert status == 200, out
    rows = out["meta_info"]["output_token_logprobs"]
    return [r[1] for r in rows], [r[0] for r in rows]


def test_rows_of_different_adapters_share_a_decode_batch(server, adapters):
    for s in (1, 2):
        body = {"lora_name": f"mix{s}", "lora_path": adapters[s]}
        assert call(server, "/load_lora_adapter", body)[0] == 200
    names = [None, "mix1", "mix2"]
    alone = [greedy(server, n) for n in names]
    # the adapters matter: each row's tokens or logprobs differ from the base's
    assert all(run != alone[0] for run in alone[1:])
    with ThreadPoolExecutor(6) as pool:
        together = list(pool.map(lambda n: greedy(server, n), names * 2))
    for (ids, logps), (want_ids, want_logps) in zip(together, alone * 2, strict=True):
        assert ids == want_ids
        assert logps == pytest.approx(want_logps, abs=1e-4)
    for s in (1, 2):
        assert call(server, "/unload_lora_adapter", {"lora_name": f"mix{s}"})[0] == 200


def test_unknown_and_duplicate_names_are_refused_as_sglang_does(server, adapters):
    status, out = call(
        server, "/generate",
        {"input_ids": PROMPT, "sampling_params": {"max_new_tokens": 1}, "lora_path": "nope"},
    )  # fmt: skip
    assert status == 400
    assert out["error"]["message"].startswith(
        "Got LoRA adapter that has never been loaded: nope\nAll loaded adapters: "
    )
    status, out = call(server, "/unload_lora_adapter", {"lora_name": "nope"})
    assert (status, out["success"]) == (400, False)
    assert out["error_message"].startswith("LoRA with name nope does not exist.")
    body = {"lora_name": "dup", "lora_path": adapters[1]}
    assert call(server, "/load_lora_adapter", body)[0] == 200
    status, out = call(server, "/load_lora_adapter", body)
    assert status == 400
    assert out["error_message"] == (
        "Failed to load LoRA adapter dup because it is already loaded"
    )
    assert call(server, "/unload_lora_adapter", {"lora_name": "dup"})[0] == 200


def test_areal_pushes_keep_the_last_versions_and_drop_older_ones(
    server, adapters, tmp_path
):
    """Five pushes as AReaL's disk weight update makes them, keep = 3."""
    backend = SGLangBackend()
    meta = WeightUpdateMeta(
        type="disk",
        path=str(tmp_path / "weight_update"),
        use_lora=True,
        lora_name="memagent",
        lora_keep_versions=3,
    )
    for version in range(5):
        vmeta = meta.with_version(version)
        shutil.copytree(adapters[1 + version % 2], vmeta.path)
        for req in backend.build_disk_weight_update_requests(vmeta).requests:
            status, out = call(server, req.endpoint, req.payload)
            assert status == 200 or req.best_effort, out
        shutil.rmtree(vmeta.path)  # AReaL's clear_checkpoint_after_load
    lora = call(server, "/get_server_info")[1]["lora"]
    assert sorted(lora["loaded"]) == ["memagent-v2", "memagent-v3", "memagent-v4"]
    assert lora["unloads"][-2:] == ["memagent-v0", "memagent-v1"]

    def generate(version):
        gconfig = GenerationHyperparameters(max_new_tokens=2, lora_name="memagent")
        req = ModelRequest(input_ids=PROMPT, gconfig=gconfig)
        http = backend.build_generation_request(req, with_lora=True, version=version)
        return call(server, http.endpoint, http.payload)

    # The newest version is served from memory (its folder is gone) ...
    assert generate(4)[0] == 200
    # ... and an unloaded one cannot be read again from its deleted folder.
    status, out = generate(0)
    assert status == 400
    assert out["error"]["message"].startswith(
        "Failed to implicitly load LoRA adapter memagent-v0: "
    )
    for version in (2, 3, 4):
        body = {"lora_name": f"memagent-v{version}"}
        assert call(server, "/unload_lora_adapter", body)[0] == 200


def test_an_unloaded_adapter_whose_folder_remains_is_read_again(server, adapters):
    body = {"lora_name": "again", "lora_path": adapters[2]}
    assert call(server, "/load_lora_adapter", body)[0] == 200
    first = prompt_logprobs(server, "again")
    assert call(server, "/unload_lora_adapter", {"lora_name": "again"})[0] == 200
    assert prompt_logprobs(server, "again") == pytest.approx(first, abs=1e-6)
    assert call(server, "/unload_lora_adapter", {"lora_name": "again"})[0] == 200


def test_without_enable_lora_adapters_are_refused(needle_model_dir, adapters, tmp_path):
    with StandinServer(needle_model_dir, log_file=tmp_path / "server.log") as plain:
        status, out = call(
            plain, "/load_lora_adapter", {"lora_name": "a", "lora_path": adapters[1]}
        )
        assert (status, out["success"]) == (400, False)
        assert out["error_message"] == (
            "LoRA is not enabled. Please set `--enable-lora` to enable LoRA."
        )
        status, out = call(
            plain, "/generate",
            {"input_ids": PROMPT, "sampling_params": {"max_new_tokens": 1}, "lora_path": "a"},
        )  # fmt: skip
        assert status == 400
        assert "LoRA is not enabled" in out["error"]["message"]


def test_lora_paths_preload_adapters_at_start(needle_model_dir, adapters, tmp_path):
    """AReaL launches SGLang with ``--lora-paths NAME-v0=PATH``."""
    args = ["--lora-paths", f"memagent-v0={adapters[2]}"]
    log = tmp_path / "server.log"
    with StandinServer(needle_model_dir, log_file=log, extra_args=args) as s:
        lora = call(s, "/get_server_info")[1]["lora"]
        assert lora["enabled"] and list(lora["loaded"]) == ["memagent-v0"]
        assert lora["loaded"]["memagent-v0"]["digest"] == adapter_digest(adapters[2])
        assert prompt_logprobs(s, "memagent-v0") == pytest.approx(
            reference_logprobs(needle_model_dir, adapters[2]), abs=1e-4
        )

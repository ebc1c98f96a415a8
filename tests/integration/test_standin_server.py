"""The CPU stand-in SGLang server (standin.server): health and info, pause and
continue, weight updates from disk, refused requests, the launcher. What
``/generate`` returns is checked in test_standin_generate.py.

Stand-in only, read here for checks SGLang gives no way to make:
``/weights_digest``, ``/weights_checksum`` and the ``running`` / ``waiting``
fields of ``/get_server_info``.
"""

import threading
import time

import pytest
from transformers import AutoModelForCausalLM

from standin.model import weights_digest
from standin.tiny_model import build_tiny_model
from tests.http import call

PROMPT = [5, 17, 42, 99, 3, 250, 7]


def generate(server, input_ids, timeout=60.0, **sampling):
    body = {
        "input_ids": input_ids,
        "sampling_params": {"max_new_tokens": 8, "temperature": 1.0, **sampling},
        "return_logprob": True,
        "stream": False,
    }
    status, out = call(server, "/generate", body, timeout=timeout)
    assert status == 200, out
    return out


def pairs(out):
    return out["meta_info"]["output_token_logprobs"]


def wait_for(server, field, n, timeout=60.0):
    """Poll ``/get_server_info`` until ``field`` (running, waiting) reaches ``n``.

    A running request has its first token: the stand-in admits a request with
    its prefill, which samples that token."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if call(server, "/get_server_info")[1][field] >= n:
            return
        time.sleep(0.02)
    raise TimeoutError(f"{field} never reached {n}")


def wait_running(server, n=1):
    wait_for(server, "running", n)


def test_health_and_info(standin_server, tiny_model_dir):
    assert call(standin_server, "/health")[0] == 200
    assert call(standin_server, "/health_generate")[0] == 200
    for ep in ("/get_model_info", "/model_info"):
        status, info = call(standin_server, ep)
        assert status == 200 and info["model_path"] == str(tiny_model_dir)
    for ep in (
        "/flush_cache",
        "/release_memory_occupation",
        "/resume_memory_occupation",
    ):
        assert call(standin_server, ep, {})[0] == 200


def test_pause_aborts_and_queues_until_continue(standin_server):
    assert call(standin_server, "/pause_generation", {})[0] == 200  # idle pause is fine
    assert call(standin_server, "/continue_generation", {})[0] == 200
    results = {}

    def run(key, n):
        results[key] = generate(
            standin_server, PROMPT, max_new_tokens=n, ignore_eos=True
        )

    long = threading.Thread(target=run, args=("long", 20000))
    long.start()
    try:
        wait_running(standin_server)
        time.sleep(0.1)
        status, body = call(standin_server, "/pause_generation", {})
        assert status == 200 and body["success"]
        long.join(10)
        assert not long.is_alive()
        meta = results["long"]["meta_info"]
        assert meta["finish_reason"]["type"] == "abort"
        assert 0 < meta["completion_tokens"] == len(pairs(results["long"])) < 20000
        # A request sent while paused waits (no busy abort loop) until continue.
        queued = threading.Thread(target=run, args=("queued", 4))
        queued.start()
        wait_for(standin_server, "waiting", 1)
        time.sleep(0.5)  # time for a wrong server to abort it again
        assert queued.is_alive()
        assert call(standin_server, "/get_server_info")[1]["waiting"] == 1
    finally:
        assert call(standin_server, "/continue_generation", {})[0] == 200
    queued.join(20)
    assert results["queued"]["meta_info"]["finish_reason"]["type"] == "length"
    assert len(results["queued"]["output_ids"]) == 4


def test_update_weights_from_disk(standin_server, tiny_model_dir, tmp_path):
    base_digest = weights_digest(AutoModelForCausalLM.from_pretrained(tiny_model_dir))
    status, body = call(standin_server, "/weights_digest")
    assert status == 200 and body["digest"] == base_digest
    n0 = body["n_updates"]
    other = build_tiny_model(tmp_path / "seed1", seed=1)
    other_digest = weights_digest(AutoModelForCausalLM.from_pretrained(other))
    assert other_digest != base_digest
    results = {}
    long = threading.Thread(
        target=lambda: results.update(
            out=generate(standin_server, PROMPT, max_new_tokens=20000, ignore_eos=True)
        )
    )
    long.start()
    try:
        wait_running(standin_server)
        body = {"model_path": str(other), "abort_all_requests": True}
        status, resp = call(standin_server, "/update_weights_from_disk", body)
        assert status == 200 and resp["success"], resp
        long.join(10)
        assert results["out"]["meta_info"]["finish_reason"]["type"] == "abort"
        status, body = call(standin_server, "/weights_digest")
        assert body == {
            "digest": other_digest,
            "n_updates": n0 + 1,
            "model_path": str(other),
        }
        status, ck = call(standin_server, "/weights_checksum")
        assert (
            status == 200
            and ck["n_updates"] == n0 + 1
            and isinstance(ck["checksum"], float)
        )
        generate(standin_server, PROMPT, max_new_tokens=3)
    finally:
        body = {"model_path": str(tiny_model_dir), "abort_all_requests": True}
        assert call(standin_server, "/update_weights_from_disk", body)[0] == 200
    assert call(standin_server, "/weights_digest")[1]["digest"] == base_digest


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"input_ids": []},
        {"input_ids": [1, 2, 100000]},
        {"input_ids": [1, -1]},
        {"input_ids": [1, "a"]},
        {"input_ids": [[1, 2]]},
        {"input_ids": [1, 2], "sampling_params": {"temperature": -1}},
        {"input_ids": [1, 2], "sampling_params": {"max_new_tokens": "many"}},
        {"input_ids": [1, 2], "stream": True},
    ],
)
def test_bad_generate_requests(standin_server, body):
    status, out = call(standin_server, "/generate", body)
    assert status == 400 and out["error"]["message"]


def test_bad_json_and_updates_out_of_order(standin_server):
    status, out = call(standin_server, "/generate", raw=b"{not json")
    assert status == 400 and "JSON" in out["error"]["message"]
    status, out = call(
        standin_server, "/update_weights_from_disk", {"model_path": "/no/such/dir"}
    )
    assert status == 400 and out["success"] is False
    status, out = call(standin_server, "/init_weights_update_group", {})
    assert status == 400 and "master_address" in out["message"]
    body = {"names": ["lm_head.weight"], "dtypes": ["float32"], "shapes": [[1]]}
    status, out = call(standin_server, "/update_weights_from_distributed", body)
    assert status == 400 and "call `init_weights_update_group` first" in out["message"]


def test_launcher_refuses_a_dir_without_model(tmp_path):
    from standin.launch import StandinServer

    with pytest.raises(FileNotFoundError):
        StandinServer(tmp_path).start()

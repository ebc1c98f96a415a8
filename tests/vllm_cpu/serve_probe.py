"""The smoke's service stage: the product's ``examples/serve.py`` (no stand-in
class) in front of the running vLLM server, named by address
(``AREAL_LLM_SERVER_ADDRS``, ``rollout.backend=vllm:d1``), as docs/serve.md's
"a vLLM server already running" command starts it, with the needle task's
sizes. A 64-chunk document is read turn by turn through AReaL's
``RemotevLLMEngine`` and answered in OpenAI's shape, streamed too; the model
is the smoke's random one, so the answer's words are not checked, its shape
and every turn are.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READY = re.compile(r"MemAgent service at (http://\S+)/v1 ")
# config_eval.yaml at the needle task's sizes (config_cpu.yaml's, which the
# smoke's server was started with: its max_model_len is gconfig.max_tokens)
NEEDLE_SIZES = (
    "memagent.chunk_tokens=6",
    "memagent.max_memory_tokens=3",
    "memagent.max_final_tokens=4",
    "memagent.initial_memory=none",
    "memagent.prompts=prompts/needle.yaml",
    "memagent.engine_retry_s=5",
    "gconfig.max_new_tokens=4",
    "gconfig.max_tokens=64",
)


def serve_cmd(model: Path, work: Path) -> list[str]:
    return [
        sys.executable, "examples/serve.py", "--config", "config_eval.yaml",
        f"actor.path={model}", "rollout.backend=vllm:d1", *NEEDLE_SIZES,
        f"cluster.fileroot={work / 'serve_areal'}",
        f"cluster.name_resolve.nfs_record_root={work / 'serve_nr'}", "--port", "0",
    ]  # fmt: skip


def post(url: str, body: dict) -> bytes:
    data = json.dumps(body).encode()
    req = urllib.request.Request(url, data, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as reply:
        assert reply.status == 200, reply.status
        return reply.read()


def check_service(server_addr: str, model: Path, work: Path, limit: float) -> float:
    """Start the service, ask it, stream from it, stop it; seconds to its
    first answer. Raises naming what failed."""
    log = work / "serve.log"
    env = {**os.environ, "AREAL_LLM_SERVER_ADDRS": server_addr, "HF_HUB_OFFLINE": "1"}
    with log.open("w") as out:
        proc = subprocess.Popen(
            serve_cmd(model, work), cwd=ROOT, env=env, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    start = time.monotonic()
    try:
        url = None
        while url is None:
            text = log.read_text(errors="replace")
            if found := READY.search(text):
                url = found.group(1)
            elif proc.poll() is not None or time.monotonic() - start > limit:
                raise RuntimeError(f"the service did not start:\n{text[-3000:]}")
            else:
                time.sleep(0.5)
        document = (ROOT / "docs" / "needle_64.txt").read_text()
        body = {
            "model": "memagent",
            "temperature": 0,
            "messages": [
                {"role": "user", "content": document},
                {"role": "user", "content": "what is the code of eve ?"},
            ],
        }
        reply = json.loads(post(f"{url}/v1/chat/completions", body))
        ext = reply["memagent"]
        assert (ext["chunks"], ext["turns"]) == (64, 65), ext
        assert isinstance(reply["choices"][0]["message"]["content"], str), reply
        assert reply["usage"]["completion_tokens"] > 0, reply["usage"]
        answered = time.monotonic() - start
        events = post(f"{url}/v1/chat/completions", {**body, "stream": True})
        lines = [x for x in events.decode().split("\n") if x]
        assert lines[-1] == "data: [DONE]", lines[-3:]
        turns = [json.loads(x[6:]).get("memagent", {}) for x in lines[:-1]]
        assert [t["turn"] for t in turns if "turn" in t] == list(range(64))
        print(f"[smoke] service: answer {reply['choices'][0]['message']['content']!r}, "
              f"{reply['usage']['total_tokens']} tokens in 65 turns; streamed 64 turn events")  # fmt: skip
        return answered
    except BaseException:
        print(f"[smoke] service log (end):\n{log.read_text(errors='replace')[-3000:]}")
        raise
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

"""ask.py's refusals: bad input is named and refused (exit 2) before any server
starts; an episode that gives no record (dropped by AReaL's executor, past its
deadline) ends ask.py with the cause (exit 1); a launched worker gets the ids as
a file. docs/trace.md's ask command itself, as written, runs on the CPU main
job's trained checkpoint in tests/e2e/test_learning.py."""

from __future__ import annotations

import asyncio
import io
import sys

import pytest

from tests.e2e.ask_command import REPO


def ask_main(argv: list[str]) -> None:
    """``python -m standin.ask`` in this process, examples/ask.py's logger
    writing to this test's output (AReaL's loggers keep the stream they were
    made with: an earlier test's, closed since)."""
    from areal.utils import logging

    from examples import ask as entry
    from standin import ask

    entry.logger = logging.getLogger("MemAgentAsk")
    ask.main(argv)


def refused(capfd, needle_model_dir, *args: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        ask_main(
            ["--config", "config_eval_needle.yaml", f"actor.path={needle_model_dir}",
             "--question", "what is the code of eve ?", *args]
        )  # fmt: skip
    assert exit_.value.code == 2
    out = capfd.readouterr()
    return out.out + out.err


def test_bad_inputs_are_refused_before_any_server(
    capfd, needle_model_dir, tmp_path, monkeypatch
):
    monkeypatch.chdir(REPO)
    empty = tmp_path / "empty.md"
    empty.write_text("\n \n")
    doc = "--document=docs/needle_64.txt"
    cases = {
        f"{tmp_path}/missing.txt: no such file": [
            "--document",
            f"{tmp_path}/missing.txt",
        ],
        "empty.md: empty": ["--document", str(empty)],
        "--question: with it the memory turn": [doc, "--question", "eve " * 60],
        "memagent.chunk_tokens": [doc, "memagent.chunk_tokens=100"],
    }
    for want, args in cases.items():
        text = refused(capfd, needle_model_dir, *args)
        assert want in text and "refused" in text, text[-1500:]
        assert "stand-in server (not a production engine) at" not in text


def test_stdin_that_is_not_utf8_is_refused_under_a_c_locale(
    capfd, needle_model_dir, monkeypatch
):
    # Under LC_ALL=C, Python reads standard input as UTF-8 with surrogateescape:
    # the bad byte reached the tokenizer, which failed with a traceback.
    data = io.BytesIO(b"code of eve is \xff .\n")
    stdin = io.TextIOWrapper(data, encoding="utf-8", errors="surrogateescape")
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.chdir(REPO)
    text = refused(capfd, needle_model_dir, "--document", "-")
    assert "refused: --document -: not UTF-8 text" in text, text[-1500:]


def test_the_config_a_launched_worker_rebuilds_is_whole(needle_model_dir, monkeypatch):
    # scheduler.type=local sends the config to the rollout worker, which
    # rebuilds it; ask.py empties the eval sets only while nothing is launched
    # (an empty eval.tasks fails the rebuild and the worker's configure).
    from areal.infra.rpc.serialization import deserialize_value, serialize_value

    from examples import ask as entry
    from standin import ask
    from standin.config import StandinEvalConfig

    sent = {}
    monkeypatch.setattr(entry, "run", lambda config, *a: sent.setdefault("c", config))
    monkeypatch.setattr(entry, "show", lambda *a: None)
    monkeypatch.chdir(REPO)
    ask.main(
        ["--config", "config_eval_needle.yaml", f"actor.path={needle_model_dir}",
         "--document", "docs/needle_64.txt", "--question", "what is the code of eve ?"]
    )  # fmt: skip
    rebuilt = deserialize_value(serialize_value(sent["c"]))
    assert isinstance(rebuilt, StandinEvalConfig) and rebuilt.eval.tasks


# ------------------------------------------- an episode that gives no record (#46)


def ask_on(needle_model_dir, root, addr, *args):
    """ask.py in this process on a server at ``addr`` (none is started)."""
    ask_main(
        ["--config", "config_eval_needle.yaml", f"actor.path={needle_model_dir}",
         f"+standin.server_addr={addr}", f"eval.output_dir={root / 'out'}",
         f"cluster.fileroot={root / 'areal'}",
         f"cluster.name_resolve.nfs_record_root={root / 'nr'}",
         "--document", "docs/needle_64.txt",
         "--question", "what is the code of eve ?", *args]
    )  # fmt: skip


@pytest.fixture
def silent_server():
    """A loopback SGLang that is healthy (GET /health: 200) and never answers
    a call (a hung server), as ``host:port``."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    done = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

        def do_POST(self):
            done.wait()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    done.set()
    server.shutdown()
    server.server_close()


def failed(capfd, run) -> str:
    """``run()``'s exit (1, asserted) and its output."""
    with pytest.raises(SystemExit) as exit_:
        run()
    out = capfd.readouterr()
    assert exit_.value.code == 1, out.err[-2000:]
    return out.out + out.err


def test_an_episode_the_executor_drops_ends_ask_with_the_cause(
    capfd, needle_model_dir, tmp_path, monkeypatch, silent_server
):
    # AReaL's workflow executor logs a workflow that raises and returns None;
    # ask.py waited for a record that never came.
    from memagent_workflow.eval.ask import AskWorkflow

    async def raises(self, engine, data):
        raise RuntimeError("a bug in the workflow")

    monkeypatch.setattr(AskWorkflow, "arun_episode", raises)
    monkeypatch.chdir(REPO)
    text = failed(capfd, lambda: ask_on(needle_model_dir, tmp_path, silent_server))
    assert "a bug in the workflow" in text  # AReaL's log of the failure
    (line,) = [x for x in text.splitlines() if "the episode failed" in x]
    assert "the engine returned no record" in line, text[-2000:]


def test_an_episode_past_its_deadline_ends_ask_naming_the_knob(
    capfd, needle_model_dir, tmp_path, monkeypatch, silent_server
):
    # The server never answers: each call waits out rollout.request_timeout and
    # is retried for memagent.engine_retry_s (60 s here); the deadline ends it.
    monkeypatch.chdir(REPO)
    text = failed(
        capfd,
        lambda: ask_on(
            needle_model_dir, tmp_path, silent_server, "rollout.request_timeout=2"
        ),
    )
    (line,) = [x for x in text.splitlines() if "the episode failed" in x]
    assert "no result within rollout.request_timeout=2 s" in line, text[-2000:]


def test_a_launched_worker_gets_the_ids_as_a_file_not_in_the_rpc(
    needle_model_dir, tmp_path, monkeypatch
):
    # scheduler.type=local: AReaL's controller sends the sample to the rollout
    # worker as JSON (serialize_value); the ids went as a list of ints in it.
    import contextlib
    import json

    from areal.infra.rpc.serialization import deserialize_value, serialize_value
    from areal.utils.dynamic_import import import_from_string

    from examples import ask as entry
    from tests.fakes import FakeEngine

    shared = tmp_path / "areal" / "ask"
    seen: dict = {}

    class Controller:
        """AReaL's rollout controller as ask.py drives it; the worker's side
        runs the workflow named, on the deserialized sample, in this process."""

        def submit(self, data, workflow, workflow_kwargs):
            seen["rpc_bytes"] = len(json.dumps(serialize_value(data)))
            data = deserialize_value(serialize_value(data))
            kwargs = deserialize_value(serialize_value(workflow_kwargs))
            wf = import_from_string(workflow)(**kwargs)
            eos = wf.tokenizer.eos_token_id
            engine = FakeEngine(script=lambda episode, turn: ([eos], "stop"))
            self.rec = asyncio.run(wf.arun_episode(engine, data))
            seen["files"] = sorted(p.name for p in shared.iterdir())

        def wait(self, count, timeout=None, raise_timeout=True):
            return [self.rec]

    doc = tmp_path / "long.txt"
    doc.write_text((REPO / "docs" / "needle_64.txt").read_text() * 16)
    monkeypatch.setattr(
        entry, "open_engine", lambda *a: contextlib.nullcontext(Controller())
    )
    monkeypatch.setattr(entry, "show", lambda rec, args: seen.setdefault("rec", rec))
    monkeypatch.chdir(REPO)
    ask_main(
        ["--config", "config_eval_needle.yaml", f"actor.path={needle_model_dir}",
         "scheduler.type=local", f"cluster.fileroot={tmp_path / 'areal'}",
         f"cluster.name_resolve.nfs_record_root={tmp_path / 'nr'}",
         "--document", str(doc), "--question", "what is the code of eve ?"]
    )  # fmt: skip
    rec = seen["rec"]
    assert rec["error"] is None and rec["n_chunks"] == 16 * 64
    assert rec["context_tokens"] == 16 * 64 * 6  # one sentence a chunk
    assert seen["rpc_bytes"] < 1000  # the id, the question, the file's path
    assert [n.endswith(".ids.npy") for n in seen["files"]].count(True) == 1
    assert not list(shared.iterdir())  # removed after the run

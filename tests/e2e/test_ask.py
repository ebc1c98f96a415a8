"""ask.py's refusals: bad input is named and refused (exit 2) before any server
starts. docs/trace.md's ask command itself, as written, runs on the CPU main
job's trained checkpoint in tests/e2e/test_learning.py."""

from __future__ import annotations

import pytest

from tests.e2e.ask_command import REPO


def refused(capfd, needle_model_dir, *args: str) -> str:
    from standin import ask

    with pytest.raises(SystemExit) as exit_:
        ask.main(
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

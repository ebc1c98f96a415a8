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

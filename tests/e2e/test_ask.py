"""docs/trace.md's ask.py command, run as written through the stand-in, and its
refusals. The command's checkpoint (``$CKPT``) is the CPU main job's; here it is
the session's warm-started needle model (cheap; it is not trained to keep the
code, so the answer's correctness is not asserted: the trained checkpoint's
right answer is shown in docs/trace.md). Test-only overrides keep its files in a
scratch folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def ask_command() -> str:
    """The ``standin.ask`` line under ``<!-- ask-command -->`` in docs/trace.md."""
    text = (REPO / "docs" / "trace.md").read_text().split("<!-- ask-command -->")[1]
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    return next(line for line in block.splitlines() if "standin.ask" in line)


@pytest.fixture(scope="module")
def asked(tmp_path_factory, needle_model_dir):
    root = tmp_path_factory.mktemp("ask")
    cmd = ask_command()
    assert cmd.startswith("uv run python -m standin.ask ")
    cmd = cmd.replace("uv run python", sys.executable, 1)
    scratch = (
        f" eval.output_dir={root / 'out'} cluster.fileroot={root / 'areal'}"
        f" cluster.name_resolve.nfs_record_root={root / 'nr'}"
        f" --trace {root / 'page.html'}"  # the last --trace wins
    )
    env = {**os.environ, "CKPT": str(needle_model_dir), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        ["bash", "-c", cmd + scratch], cwd=REPO, env=env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done, root


def test_it_shows_a_bar_over_64_chunks_the_memory_and_the_answer(asked):
    done, _ = asked
    assert "64/64" in done.stderr and "memory_tokens=" in done.stderr
    assert re.search(r"^final memory \(64 turns\): \S", done.stdout, re.M)
    assert re.search(r"^answer: ", done.stdout, re.M)
    assert re.search(r"^gold: red -> (right|wrong) \(", done.stdout, re.M)


def test_it_writes_the_trace_page_with_the_evidence_located(asked):
    import json

    _, root = asked
    page = (root / "page.html").read_text()
    assert '<table id="diagnostics">' in page
    data = page.split('id="trace-data">', 1)[1].split("</script>", 1)[0]
    sample = json.loads(data.replace("<\\/", "</"))["samples"][0]
    assert len(sample["turns"]) == 64 and sample["terms"] == ["red"]
    # located by the gold answer: every sentence (one a chunk) that says "red",
    # the needle "code of eve is red ." (the 6th) among them
    lines = (REPO / "docs" / "needle_64.txt").read_text().splitlines()
    assert sample["evidence_chunks"] == [i for i, s in enumerate(lines) if " red " in s]
    assert 5 in sample["evidence_chunks"] and sample["turns"][5]["evidence"]


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

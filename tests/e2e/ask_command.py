"""docs/trace.md's ask command (under ``<!-- ask-command -->``), as written, run
through the stand-in with ``$CKPT`` set; test-only overrides appended to it keep
its files in a scratch folder."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def ask_block() -> list[str]:
    """The lines of the bash block under ``<!-- ask-command -->``."""
    text = (REPO / "docs" / "trace.md").read_text().split("<!-- ask-command -->")[1]
    return re.search(r"```bash\n(.*?)```", text, re.S).group(1).splitlines()


def ask_command() -> str:
    """The block's ``standin.ask`` line."""
    return next(line for line in ask_block() if "standin.ask" in line)


def checkpoint_path() -> str:
    """The block's ``CKPT=PATH`` line's path (``$USER`` unexpanded)."""
    line = next(line for line in ask_block() if line.startswith("CKPT="))
    return line.removeprefix("CKPT=")


def run_ask(ckpt: Path, root: Path, extra: str = "") -> subprocess.CompletedProcess:
    """The command with ``CKPT=ckpt``; its page goes to ``root / "page.html"``;
    ``extra``: overrides appended."""
    cmd = ask_command()
    assert cmd.startswith("uv run python -m standin.ask ")
    cmd = cmd.replace("uv run python", sys.executable, 1)
    scratch = (
        f" eval.output_dir={root / 'out'} cluster.fileroot={root / 'areal'}"
        f" cluster.name_resolve.nfs_record_root={root / 'nr'}"
        f" --trace {root / 'page.html'}"  # the last --trace wins
        f" {extra}"
    )
    env = {**os.environ, "CKPT": str(ckpt), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        ["bash", "-c", cmd + scratch], cwd=REPO, env=env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def page_sample(page: Path) -> dict[str, Any]:
    """The one sample of a trace page written by ask.py (its embedded data)."""
    text = page.read_text()
    assert '<table id="diagnostics">' in text
    data = text.split('id="trace-data">', 1)[1].split("</script>", 1)[0]
    (sample,) = json.loads(data.replace("<\\/", "</"))["samples"]
    return sample

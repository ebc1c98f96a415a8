"""Every repository path the documents and configs name exists.

A path here is a token that starts at one of the repository's top-level
folders and ends in a file name with an extension or in ``/``
(``standin/tiny_model.py``, ``tests/unit/``), a file at the root
(``config_cpu.yaml``), or a bare Python file name (``cpu_job.py``: beside the
document, or anywhere in the repository). Not paths: what runs create (``outputs/``,
``data/``), placeholders (``eval_{N}.json``, ``DIR``, ``*.png``), URLs and the
paths of other repositories they name.
"""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CREATED_BY_RUNS = ("outputs", "data")  # written by the commands the docs show
SOURCES = sorted(
    {
        ROOT / "README.md",
        ROOT / "standin" / "README.md",
        ROOT / "bench" / "README.md",
        ROOT / ".ci" / "run",
        *ROOT.glob("docs/**/*.md"),
        *ROOT.glob("*.yaml"),
    }
)
URL = re.compile(r"[a-z]+://\S+")
TOKEN = re.compile(r"[\w.{}<>*$-]+(?:/[\w.{}<>*$-]*)+|[\w.-]+\.[a-z]{2,5}\b")
PLACEHOLDER = re.compile(r"[{}<>*$]|\.\.\.|(^|/)[A-Z][A-Z_]*(/|$|\.)")


def top_level() -> tuple[set[str], set[str]]:
    """The repository's top-level folders and files (run outputs, caches and the
    virtual environment left out)."""
    entries = [p for p in ROOT.iterdir() if p.name not in CREATED_BY_RUNS]
    folders = {
        p.name
        for p in entries
        if p.is_dir() and (not p.name.startswith(".") or p.name == ".ci")
    }
    return folders, {p.name for p in entries if p.is_file()}


def named_paths(text: str) -> set[str]:
    """The repository paths ``text`` names (see the module docstring)."""
    folders, _ = top_level()
    found = set()
    for token in TOKEN.findall(URL.sub(" ", text)):
        token = token.rstrip(".-").removeprefix("./")
        if PLACEHOLDER.search(token):
            continue
        first, last = token.split("/", 1)[0], token.rsplit("/", 1)[-1]
        if "/" in token and first in folders and (last == "" or "." in last):
            found.add(token)
        elif "/" not in token and re.fullmatch(
            r"[\w-]+\.(ya?ml|toml|lock|txt|py)", token
        ):
            found.add(token)  # a root file (config*.yaml, uv.lock) or a .py name
    return {
        f for f in found if f.split("/", 1)[0] not in CREATED_BY_RUNS and not ignored(f)
    }


def ignored(path: str) -> bool:
    """Git ignores ``path``: a cache or output that runs create (bench/.cache/)."""
    check = ["git", "check-ignore", "-q", "--no-index", path]
    return subprocess.run(check, cwd=ROOT).returncode == 0


def exists(path: str, source: Path) -> bool:
    """``path`` from the root; a bare ``.py`` name beside ``source`` or anywhere."""
    if (ROOT / path).exists():
        return True
    if "/" in path or not path.endswith(".py"):
        return False
    return (source.parent / path).exists() or any(
        True for pkg in top_level()[0] for _ in (ROOT / pkg).rglob(path)
    )


def test_the_sources_are_there():
    assert ROOT / "README.md" in SOURCES and ROOT / "config_cpu.yaml" in SOURCES
    assert ROOT / "docs" / "gpu.md" in SOURCES and ROOT / ".ci" / "run" in SOURCES


def test_a_stale_path_is_caught():
    text = "see `standin/tiny.py`, standin/tiny_model.py, eval_{N}.json and DIR/x.py"
    assert named_paths(text) == {"standin/tiny.py", "standin/tiny_model.py"}
    readme = ROOT / "standin" / "README.md"
    assert not exists("standin/tiny.py", readme) and exists("cpu_job.py", readme)
    assert not exists("tiny.py", readme) and exists("test_paths.py", readme)
    assert named_paths("outputs/cpu/x.png https://github.com/a/b/c.py") == set()
    assert named_paths("128 prompts/step, and tiny.py") == {"tiny.py"}
    assert named_paths("uv run python examples/train.py --config config_cpu.yaml") == {
        "examples/train.py",
        "config_cpu.yaml",
    }


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_named_path_exists(source):
    named = named_paths(source.read_text())
    missing = sorted(p for p in named if not exists(p, source))
    assert missing == [], f"{source.relative_to(ROOT)} names missing path(s) {missing}"

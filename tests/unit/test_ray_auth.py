"""Ray's token on a machine that never ran Ray: `standin.ray_nodes` makes it
before its first `ray start` (which never makes one), with Ray's own CLI, and
keeps one that is there (docs/ray-auth.md)."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from tests.fresh_home import OWNER_ENV


def ensure(monkeypatch, home: Path, **env: str) -> str:
    """`ensure_auth_token` with ``HOME`` and ``env`` (Ray's CLI runs in a
    process of its own, this one never loads Ray's token)."""
    from standin.ray_nodes import ensure_auth_token

    monkeypatch.setenv("HOME", str(home))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return ensure_auth_token()


def test_a_home_without_a_token_gets_one_and_keeps_it(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    first = ensure(monkeypatch, home)
    token = home / ".ray" / "auth_token"
    assert first == (
        "Ray authentication: token made now in ~/.ray/auth_token (docs/ray-auth.md)"
    )
    made = token.read_text()
    assert len(made) >= 32 and made not in first  # never printed
    assert ensure(monkeypatch, home) == (
        "Ray authentication: token found (kept) (docs/ray-auth.md)"
    )
    assert token.read_text() == made


def test_a_token_given_by_path_is_used_and_none_is_made(tmp_path, monkeypatch):
    home, given = tmp_path / "home", tmp_path / "token"
    home.mkdir()
    given.write_text("a" * 32)
    assert "found (kept)" in ensure(monkeypatch, home, RAY_AUTH_TOKEN_PATH=str(given))
    assert not (home / ".ray").exists()


def test_auth_disabled_makes_no_token(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    said = ensure(monkeypatch, home, RAY_AUTH_MODE="disabled")
    assert said == "Ray authentication: RAY_AUTH_MODE=disabled"
    assert not (home / ".ray").exists()


def test_the_tests_run_in_a_fresh_home():
    """tests/fresh_home.py: this process's HOME is a new one of its own (not the
    user's), so no token or cache of the machine's user makes a test pass;
    uv's package cache is the user's."""
    home = Path(os.environ["HOME"])
    assert home.name.startswith("memagent-home-")
    assert home != Path(pwd.getpwuid(os.getuid()).pw_dir)
    assert os.environ[OWNER_ENV].split(":", 1)[0] == str(os.getpid())
    assert "UV_CACHE_DIR" in os.environ and "HF_HOME" not in os.environ

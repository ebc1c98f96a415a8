"""The malformed-input campaign's shared parts: how many cases each family
generates, the hypothesis settings, value strategies and the checks every
refusal passes (docs/inputs.md states the counts; test_malformed_docs.py
compares them with ``EXAMPLES``).
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from examples import prepare_data

#: Generated cases per family (hypothesis ``max_examples``).
EXAMPLES = {
    "training rows": 60,
    "training rows, parquet": 12,
    "eval set fields": 25,
    "index-only samples": 20,
    "HotpotQA source": 25,
    "haystacks": 25,
    "prompts files": 40,
    "config overrides": 6,
    "ask documents": 20,
    "ask questions": 25,
}


def campaign(family: str) -> settings:
    """Bounded and deterministic: the same cases on every run, no example
    database, no deadline (the suite runs beside other processes)."""
    return settings(
        max_examples=EXAMPLES[family],
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@contextmanager
def folder() -> Iterator[Path]:
    """A fresh folder for one generated case (hypothesis reuses a test's
    fixtures across cases, so ``tmp_path`` would be shared)."""
    with tempfile.TemporaryDirectory(prefix="malformed-") as name:
        yield Path(name)


def files_in(root: Path) -> list[str]:
    """Every file under ``root`` (temporary ones included), relative, sorted."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def assert_names(message: str, *parts: str, limit: int = 4000) -> None:
    """The refusal names every part (file, row, field) and stays readable
    (no traceback, bounded however large the bad value)."""
    missing = [p for p in parts if p not in message]
    assert not missing, f"{missing} not in: {message[:2000]}"
    assert "Traceback" not in message
    assert len(message) <= limit, f"{len(message)} characters: {message[:300]}..."


def prepare(src: Path, out: Path) -> tuple[int, str]:
    """``prepare_data.py --input src --output out`` in this process: status, stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = prepare_data.main(["--input", str(src), "--output", str(out)])
    return code, err.getvalue()


# ------------------------------------------------------------------ values

#: Text that is a good value (non-blank, valid Unicode: no lone surrogate).
good_text = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12
).map(lambda s: "t" + s)
#: Strings that ``str.strip()`` empties.
blank_text = st.text(st.sampled_from(" \t\n\r\x0b\x0c\xa0\u3000"), max_size=4)
#: A string holding a lone UTF-16 surrogate (valid JSON, not Unicode).
surrogate_text = st.tuples(good_text, st.characters(categories=("Cs",))).map(
    lambda p: p[0] + p[1]
)
#: JSON values that are no string (None aside: a missing field).
not_a_string = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
#: Bytes that make a line invalid UTF-8 wherever they sit in ASCII text.
bad_bytes = st.sampled_from([b"\x80", b"\xbf", b"\xc0", b"\xc3", b"\xe2\x82", b"\xff"])
#: Field names the readers do not know (extra fields are ignored, never refused).
extra_name = st.text("abcdefgh_", min_size=1, max_size=6).map(lambda s: "x_" + s)


def json_values(*, allow_nan: bool, key_size: int, max_leaves: int):
    """Any JSON-shaped value: scalars, lists and objects nested a little."""
    return st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=allow_nan)
        | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.text(max_size=key_size), inner, max_size=3)
        ),
        max_leaves=max_leaves,
    )


json_value = json_values(allow_nan=True, key_size=4, max_leaves=6)
extras = st.dictionaries(extra_name, json_value, max_size=2)

HUGE_INT = "1" + "0" * 5000  # past Python's 4300-digit limit for int("...")
DEEP = "[" * 100_000 + "]" * 100_000  # past the JSON decoder's recursion


def dumps(value: Any) -> bytes:
    """JSON as this project's readers meet it: ASCII, NaN spelled NaN."""
    return json.dumps(value, ensure_ascii=True, allow_nan=True).encode()


def with_raw(row: dict, field: str, raw: str) -> bytes:
    """``row`` as JSON with ``field``'s value replaced by the raw JSON ``raw``."""
    marker = "__raw_value__"
    return dumps({**row, field: marker}).replace(f'"{marker}"'.encode(), raw.encode())

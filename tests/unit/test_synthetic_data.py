"""The CPU job's synthetic data: written once with a record of its options; a
run asking other options is refused by name, never fed the old questions."""

from __future__ import annotations

import dataclasses
import json

import pytest

from standin.config import StandinConfig
from standin.synthetic_data import ensure_synthetic, sidecar


def rows(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_written_once_then_reused_with_its_record(tmp_path):
    path = tmp_path / "train.jsonl"
    cfg = StandinConfig(task="needle", needle_chunks=2, synthetic_train=8)
    ensure_synthetic(str(path), cfg, "train")
    first = path.read_text()
    assert len(rows(path)) == 8
    assert json.loads(sidecar(path).read_text())["standin.needle_chunks"] == 2
    ensure_synthetic(str(path), cfg, "train")  # the same options: reused
    assert path.read_text() == first


@pytest.mark.parametrize(
    "change, key",
    [
        ({"needle_chunks": 3}, "standin.needle_chunks=3"),
        ({"needle_distractors": 0.5}, "standin.needle_distractors=0.5"),
        ({"task": "two_hop"}, "standin.task='two_hop'"),
    ],
)
def test_other_options_are_refused_by_file_and_key(tmp_path, change, key):
    path = tmp_path / "valid.jsonl"
    cfg = StandinConfig(task="needle", needle_chunks=2, synthetic_valid=8)
    ensure_synthetic(str(path), cfg, "valid")
    before = path.read_text()
    other = dataclasses.replace(cfg, **change)
    with pytest.raises(ValueError, match=f"{path}: .* this run asks .*{key}"):
        ensure_synthetic(str(path), other, "valid")
    assert path.read_text() == before  # nothing rewritten


def test_another_seed_or_count_is_refused(tmp_path):
    path = tmp_path / "valid.jsonl"
    cfg = StandinConfig(task="needle", synthetic_valid=8)  # held out from seed 1
    ensure_synthetic(str(path), cfg, "valid")
    with pytest.raises(
        ValueError, match="standin.seed=0.* this run asks standin.seed=1"
    ):
        ensure_synthetic(str(path), dataclasses.replace(cfg, seed=1), "valid")
    with pytest.raises(ValueError, match="standin.synthetic_valid=16"):
        ensure_synthetic(
            str(path), dataclasses.replace(cfg, synthetic_valid=16), "valid"
        )


def test_a_file_without_a_record_is_the_users_and_used_as_it_is(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text('{"question": "q", "answer": "a"}\n')
    ensure_synthetic(str(path), StandinConfig(task="needle"), "train")
    assert rows(path) == [{"question": "q", "answer": "a"}]
    assert not sidecar(path).exists()

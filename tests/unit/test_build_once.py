"""Build-once folders under concurrent first use and after a crashed build."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest

from memagent_workflow.data.build_once import build_once, is_built, lock_path

CTX = multiprocessing.get_context("fork")
KEY = {"version": 1, "size": 3}


def _write_slowly(tmp: Path) -> None:
    """A build that takes a while, and logs who built it."""
    with open(tmp.parent / "builders.log", "a") as log:
        log.write(f"{os.getpid()}\n")
    for i in range(3):
        (tmp / f"part{i}.txt").write_text(f"part {i} of {KEY}\n")
        time.sleep(0.2)


def _race(barrier, out: str, results) -> None:
    barrier.wait()  # both processes ask for the folder at the same moment
    path = build_once(out, KEY, _write_slowly)
    results.put((os.getpid(), str(path), _contents(path)))


def _contents(path: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(path.iterdir())}


def _run_racers(target, args: tuple, n: int = 2) -> list:
    barrier, results = CTX.Barrier(n), CTX.Queue()
    procs = [
        CTX.Process(target=target, args=(barrier, *args, results)) for _ in range(n)
    ]
    for p in procs:
        p.start()
    got = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return got


def test_two_processes_building_at_once_both_get_the_one_build(tmp_path):
    out = tmp_path / "cache" / "thing"
    got = _run_racers(_race, (str(out),))
    assert len({pid for pid, _, _ in got}) == 2
    assert {path for _, path, _ in got} == {str(out)}
    first, second = (contents for _, _, contents in got)
    assert first == second and "part2.txt" in first
    # exactly one of them built; the other waited and reused the build
    assert len((tmp_path / "cache" / "builders.log").read_text().split()) == 1
    assert json.loads((out / "build.json").read_text()) == KEY
    assert not list(out.parent.glob("*.building"))


def _hang_mid_build(tmp: Path) -> None:
    (tmp / "part0.txt").write_text("half of a build\n")
    (tmp.parent / "started").touch()
    time.sleep(600)


def _build_then_hang(out: str) -> None:
    build_once(out, KEY, _hang_mid_build)


def test_a_killed_builder_leaves_nothing_taken_for_a_build(tmp_path):
    out = tmp_path / "thing"
    proc = CTX.Process(target=_build_then_hang, args=(str(out),))
    proc.start()
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline and proc.is_alive()
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    assert not out.exists() and not is_built(out, KEY)
    assert len(list(tmp_path.glob(".thing.*.building"))) == 1  # the dead build
    # The next run does not wait for the dead builder's lock, and cleans up.
    start = time.monotonic()
    build_once(out, KEY, _write_slowly)
    assert time.monotonic() - start < 30
    assert is_built(out, KEY) and (out / "part2.txt").is_file()
    assert not (out / "part0.txt").read_text().startswith("half")
    assert not list(tmp_path.glob(".thing.*.building"))
    assert lock_path(out).exists()


def test_a_failed_build_leaves_the_old_one_and_no_leftovers(tmp_path):
    out = build_once(tmp_path / "thing", KEY, _write_slowly)

    def boom(tmp: Path) -> None:
        (tmp / "part0.txt").write_text("new")
        raise RuntimeError("build failed")

    with pytest.raises(RuntimeError, match="build failed"):
        build_once(out, {"version": 2}, boom)
    assert is_built(out, KEY) and (out / "part0.txt").read_text().startswith("part")
    left = {p.name for p in tmp_path.iterdir()}
    assert left == {"thing", ".thing.lock", "builders.log"}
    build_once(out, {"version": 2}, _write_slowly)  # another key: replaced whole
    assert is_built(out, {"version": 2}) and not is_built(out, KEY)


def test_a_folder_that_is_no_build_is_refused(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="holds no cached folder"):
        build_once(mine, KEY, _write_slowly)
    assert (mine / "notes.txt").read_text() == "keep me"


def _race_tokenizer(barrier, cache: str, results) -> None:
    os.environ["BENCH_CACHE_DIR"] = cache
    from bench.vocab import tokenizer_dir

    barrier.wait()
    path = tokenizer_dir(vocab_size=400, paragraphs=300)
    results.put((os.getpid(), str(path), (path / "tokenizer.json").read_text()))


def test_benchmark_workers_building_the_tokenizer_at_once(tmp_path):
    """What `bench/run.py --only loop` does on a cold cache (it failed before)."""
    got = _run_racers(_race_tokenizer, (str(tmp_path),), n=3)
    assert len({path for _, path, _ in got}) == 1
    assert len({text for _, _, text in got}) == 1
    assert json.loads(got[0][2])["model"]["type"] == "BPE"


def _race_tiny(barrier, out: str, results) -> None:
    from standin.tiny_model import build_tiny_model

    barrier.wait()
    path = build_tiny_model(out, seed=5)
    results.put((os.getpid(), str(path), (path / "model.safetensors").read_bytes()))


def test_two_runs_building_the_stand_in_model_at_once(tmp_path):
    got = _run_racers(_race_tiny, (str(tmp_path / "model"),))
    assert got[0][1:] == got[1][1:]

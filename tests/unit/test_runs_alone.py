"""The lock under which a timing file runs alone (tests/runs_alone.py)."""

from __future__ import annotations

import threading
import time

from tests.runs_alone import file_lock


def hold(folder, alone: bool, name: str, order: list[str], release: threading.Event):
    with file_lock(folder, alone):
        order.append(f"{name} in")
        release.wait(10)
        order.append(f"{name} out")


def started(folder, alone, name, order, release) -> threading.Thread:
    thread = threading.Thread(target=hold, args=(folder, alone, name, order, release))
    thread.start()
    time.sleep(0.3)  # long enough to take the lock or block on it
    return thread


def test_shared_holders_run_together_and_an_exclusive_one_waits_for_them(tmp_path):
    order: list[str] = []
    shared, alone = threading.Event(), threading.Event()
    threads = [started(tmp_path, False, n, order, shared) for n in ("a", "b")]
    threads.append(started(tmp_path, True, "alone", order, alone))
    assert order == ["a in", "b in"]  # two shared at once; the exclusive waits
    shared.set()
    alone.set()
    for t in threads:
        t.join(10)
    assert order[-2:] == ["alone in", "alone out"]


def test_a_waiting_exclusive_holder_is_not_overtaken_by_later_shared_ones(tmp_path):
    # Without the turnstile a new shared holder joins the running one at once and
    # the exclusive one can wait for ever behind a stream of them.
    order: list[str] = []
    first, alone, later = threading.Event(), threading.Event(), threading.Event()
    a = started(tmp_path, False, "first", order, first)
    w = started(tmp_path, True, "alone", order, alone)
    b = started(tmp_path, False, "later", order, later)
    assert order == ["first in"]
    first.set()
    time.sleep(0.3)
    assert order == ["first in", "first out", "alone in"]
    alone.set()
    later.set()
    for t in (a, w, b):
        t.join(10)
    assert order == [
        "first in", "first out", "alone in", "alone out", "later in", "later out"
    ]  # fmt: skip

"""ask.py's edges (issue 46): standard input under a C locale, text with no
whitespace, the ids a launched worker gets, and the wait for the one episode
(a None from the engine, the deadline, a dead worker)."""

from __future__ import annotations

import asyncio
import io
import random
import sys

import numpy as np
import pytest

from memagent_workflow.eval import ask, ask_wait


def c_locale_stdin(data: bytes) -> io.TextIOWrapper:
    """Standard input as Python opens it under LC_ALL=C (UTF-8 mode, PEP 540):
    bytes that are not UTF-8 become lone surrogates instead of an error."""
    return io.TextIOWrapper(
        io.BytesIO(data), encoding="utf-8", errors="surrogateescape"
    )


def test_stdin_is_strict_utf8_whatever_the_locale(tokenizer, monkeypatch):
    monkeypatch.setattr(sys, "stdin", c_locale_stdin(b"code of eve \xff is red"))
    with pytest.raises(ask.AskRefused, match=r"--document -: not UTF-8"):
        ask.encode_stream(tokenizer, ask.open_document("-"), "-")
    text = "código de eve é vermelho\n"  # UTF-8 still reads as UTF-8
    monkeypatch.setattr(sys, "stdin", c_locale_stdin(text.encode()))
    ids = ask.encode_stream(tokenizer, ask.open_document("-"), "-")
    assert ids.tolist() == tokenizer.encode(text, add_special_tokens=False)


def encoded_pieces(monkeypatch) -> list[str]:
    """The texts ask.py encodes at once, from now on."""
    pieces: list[str] = []
    real = ask.encode_batch

    def spy(tokenizer, texts):
        pieces.extend(texts)
        return real(tokenizer, texts)

    monkeypatch.setattr(ask, "encode_batch", spy)
    return pieces


BLOCK = 10_000


def test_text_without_whitespace_is_cut_at_a_safe_character(
    qwen_tokenizer, monkeypatch
):
    # Chinese runs on without spaces; 6 blocks of it were one buffer, grown
    # block by block and encoded at once at the end of the file.
    rnd = random.Random(0)
    text = "".join(chr(rnd.randint(0x4E00, 0x4FFF)) for _ in range(6 * BLOCK))
    monkeypatch.setattr(ask, "BLOCK_CHARS", BLOCK)
    pieces = encoded_pieces(monkeypatch)
    ids = ask.encode_stream(qwen_tokenizer, io.StringIO(text), "zh.txt")
    assert len(pieces) > 3 and max(map(len, pieces)) <= 3 * BLOCK
    assert "".join(pieces) == text
    assert ids.tolist() == qwen_tokenizer.encode(text, add_special_tokens=False)


def test_a_run_with_no_safe_cut_is_cut_hard_at_the_bound(qwen_tokenizer, monkeypatch):
    # "====...": BPE's split of a run depends on where it began, so no cut in
    # it is safe; the text is kept whole, the tokens at a seam may differ.
    text = "=" * (5 * BLOCK)
    monkeypatch.setattr(ask, "BLOCK_CHARS", BLOCK)
    pieces = encoded_pieces(monkeypatch)
    ids = ask.encode_stream(qwen_tokenizer, io.StringIO(text), "rule.txt")
    assert len(pieces) > 1 and max(map(len, pieces)) <= 3 * BLOCK
    assert qwen_tokenizer.decode(ids.tolist()) == text


def test_a_launched_worker_reads_the_ids_from_the_shared_root(tmp_path):
    ids = np.arange(100_000, dtype=np.int32) % 500
    path = ask.save_ids(ids, str(tmp_path))
    assert path.parent == tmp_path / "ask" and path.stat().st_size < 4 * len(ids) + 200
    assert ask.load_ids({"context_ids_file": str(path)}).tolist() == ids.tolist()
    path.unlink()
    with pytest.raises(Exception, match="cluster.fileroot must be a folder every"):
        ask.load_ids({"context_ids_file": str(path)})


def test_a_trace_that_fails_is_the_samples_error_not_a_lost_episode(
    tiny_model_dir, monkeypatch
):
    # Built after the answer, outside the try, it raised into AReaL's executor,
    # which logs it and returns None: ask.py's episode, lost without a cause.
    from areal.api.cli_args import GenerationHyperparameters

    from memagent_workflow.data.synthetic import make_synthetic
    from memagent_workflow.eval.trace import TraceRecorder
    from memagent_workflow.eval.workflow import MemAgentEvalWorkflow
    from tests.fakes import FakeEngine

    wf = MemAgentEvalWorkflow(
        gconfig=GenerationHyperparameters(max_tokens=4096),
        tokenizer=str(tiny_model_dir),
        chunk_tokens=40,
        max_memory_tokens=16,
        max_final_tokens=64,  # FakeEngine.final_budget
        trace=True,
    )

    def broken(self):
        raise ValueError("trace broke")

    monkeypatch.setattr(TraceRecorder, "as_dict", broken)
    sample = make_synthetic(1, seed=3, num_docs=6)[0]
    engine = FakeEngine(wf.tokenizer, lambda ep: "\\boxed{x}")
    rec = asyncio.run(wf.arun_episode(engine, sample))
    assert rec["error"] == "episode failed: ValueError: trace broke"
    assert rec["id"] == sample["id"] and "trace" not in rec


class Engine:
    """What ask.py polls: ``wait`` gives each of ``results`` in turn, then []."""

    def __init__(self, *results, scheduler=None):
        self.results = list(results)
        self.scheduler = scheduler
        self.polls = 0

    def wait(self, count, timeout=None, raise_timeout=True):
        self.polls += 1
        item = self.results.pop(0) if self.results else []
        if isinstance(item, Exception):
            raise item
        return item


def test_a_record_ends_the_wait():
    engine = Engine([], [], [{"id": "doc"}])
    assert ask_wait.wait_record(engine, 600) == {"id": "doc"} and engine.polls == 3


def test_a_none_from_the_engine_ends_the_wait_with_its_cause():
    with pytest.raises(ask_wait.EpisodeLost, match="Workflow execution failed"):
        ask_wait.wait_record(Engine([], [None]), 600)


def test_no_record_by_the_deadline_ends_the_wait_naming_the_knob():
    with pytest.raises(ask_wait.EpisodeLost, match=r"rollout\.request_timeout=0\.5 s"):
        ask_wait.wait_record(Engine(), 0.5)


def test_a_dead_rollout_worker_ends_the_wait(monkeypatch):
    from areal.infra.scheduler.exceptions import WorkerFailedError

    class Scheduler:
        def get_workers(self, role, timeout=None):
            raise WorkerFailedError(f"{role}/0", -9, "loading\n\x1b[31mKilled\x1b[0m\n")

    monkeypatch.setattr(ask_wait, "HEALTH_EVERY_S", 0.0)
    with pytest.raises(ask_wait.EpisodeLost) as lost:
        ask_wait.wait_record(Engine(scheduler=Scheduler()), 600, worker_role="r")
    assert str(lost.value) == (
        "the rollout worker r/0 died (its launch command exited with code -9); "
        "the last line of its log: Killed"
    )
    # in this process (no role) there is no worker to ask
    assert ask_wait.wait_record(Engine([], [{"id": "d"}], scheduler=Scheduler()), 600)


def test_an_engine_that_fails_ends_the_wait_in_one_line():
    broken = RuntimeError("Background thread failed:\n  boom")
    with pytest.raises(ask_wait.EpisodeLost) as lost:
        ask_wait.wait_record(Engine(broken), 600)
    assert str(lost.value) == (
        "the inference engine failed: RuntimeError: Background thread failed: boom"
    )


class Dead:
    """A launched engine whose worker died: ``destroy`` fails, as AReaL's
    controller's does (its ``destroy`` call to the worker), before it deletes
    the workers."""

    def __init__(self):
        self.deleted = []
        self.scheduler = self

    def destroy(self):
        raise RuntimeError("Worker 'eval-rollout/0' failed with exit code 0")

    def delete_workers(self, role=None):
        self.deleted.append(role)


def test_a_failed_teardown_deletes_the_workers_and_keeps_the_runs_error():
    from memagent_workflow.eval.engine import destroyed

    engine = Dead()
    with pytest.raises(ask_wait.EpisodeLost, match="died"):
        with destroyed(engine):
            raise ask_wait.EpisodeLost("the rollout worker eval-rollout/0 died")
    assert engine.deleted == [None]  # every role's workers
    engine = Dead()  # a run that raised nothing: the teardown's error shows
    with pytest.raises(RuntimeError, match="failed with exit code"):
        with destroyed(engine):
            pass
    assert engine.deleted == [None]

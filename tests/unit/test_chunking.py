"""Splitting documents into chunks, with centre truncation."""

import numpy as np
import pytest

from memagent_workflow.chunking import centre_truncate, chunk_views


def chunk_lists(ids, chunk_tokens, max_chunks=None):
    """The chunks the workflow reads (``chunk_views``), as lists of ints."""
    chunks, _ = chunk_views(ids, chunk_tokens, max_chunks)
    return [[int(t) for t in c] for c in chunks]


def test_chunks_are_consecutive_and_only_the_last_is_short():
    ids = list(range(23))
    chunks = chunk_lists(ids, 5)
    assert [len(c) for c in chunks] == [5, 5, 5, 5, 3]
    assert sum(chunks, []) == ids


def test_exact_multiple_has_no_empty_tail():
    assert chunk_lists(list(range(10)), 5) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]


def test_empty_document_gives_no_chunks():
    assert chunk_lists([], 5) == []
    assert chunk_lists([], 5, max_chunks=2) == []


def test_max_chunks_drops_the_middle_keeping_head_and_tail():
    ids = list(range(100))
    chunks = chunk_lists(ids, 10, max_chunks=3)
    flat = sum(chunks, [])
    assert [len(c) for c in chunks] == [10, 10, 10]
    assert flat == list(range(15)) + list(range(85, 100))


def test_max_chunks_not_reached_keeps_everything():
    ids = list(range(25))
    assert sum(chunk_lists(ids, 10, max_chunks=3), []) == ids


def test_chunk_views_report_truncated_tokens_and_accept_arrays():
    ids = np.arange(1001, dtype=np.int32)
    chunks, dropped = chunk_views(ids, 100, max_chunks=4)
    assert dropped == 601
    assert sum(len(c) for c in chunks) == 400
    assert chunks[0][0] == 0 and chunks[-1][-1] == 1000


def test_centre_truncate_odd_budget_gives_head_the_extra_token():
    kept, dropped = centre_truncate(list(range(10)), 5)
    assert kept == [0, 1, 2, 8, 9] and dropped == 5


@pytest.mark.parametrize("chunk_tokens, max_chunks", [(0, None), (-1, None), (5, 0)])
def test_invalid_sizes_are_refused(chunk_tokens, max_chunks):
    with pytest.raises(ValueError):
        chunk_lists([1, 2, 3], chunk_tokens, max_chunks)

"""Training rows (memagent_workflow.rows): one per model call, right-padded."""

import numpy as np
import pytest
import torch
from areal.api.io_struct import ModelResponse
from areal.infra.workflow_executor import check_trajectory_format

from memagent_workflow.rows import Turn, pad_rows


def turn(prompt, output, logprobs, versions, trainable=True, **kw):
    resp = ModelResponse(
        input_tokens=prompt,
        output_tokens=output,
        output_logprobs=logprobs,
        output_versions=versions,
        stop_reason=kw.get("stop_reason", "stop"),
        latency=kw.get("latency", 0.5),
    )
    return Turn.from_response(prompt, resp, trainable=trainable)


TURNS = [
    turn([11, 12, 13], [21, 22], [-0.5, -0.25], [4, 5]),
    turn([31, 32], [41, 42, 43, 44], [-1.0, -2.0, -3.0, -4.0], [7, 7, 8, 9]),
    turn([51, 52, 53, 54, 55], [61], [-0.125], [2], trainable=False),
]


def unpadded(rows, key):
    """Each row of ``rows[key]`` cut at its attention length."""
    lengths = rows["attention_mask"].sum(1).tolist()
    return [row[:n] for row, n in zip(rows[key].tolist(), lengths, strict=True)]


def test_rows_are_prompt_then_output_right_padded():
    rows = pad_rows(TURNS, [0.5, -0.25, 1.5])
    assert rows["attention_mask"].tolist() == [
        [True] * 5 + [False],
        [True] * 6,
        [True] * 6,
    ]
    assert unpadded(rows, "input_ids") == [
        [11, 12, 13, 21, 22],
        [31, 32, 41, 42, 43, 44],
        [51, 52, 53, 54, 55, 61],
    ]
    # the loss covers exactly the generated tokens of trainable turns, no padding
    assert rows["loss_mask"].tolist() == [
        [0, 0, 0, 1, 1, 0],
        [0, 0, 1, 1, 1, 1],
        [0, 0, 0, 0, 0, 0],
    ]
    # the engine's logprob and version of each token sit on that token
    assert unpadded(rows, "logprobs") == [
        [0, 0, 0, -0.5, -0.25],
        [0, 0, -1.0, -2.0, -3.0, -4.0],
        [0, 0, 0, 0, 0, -0.125],
    ]
    assert unpadded(rows, "versions") == [
        [-1, -1, -1, 4, 5],
        [-1, -1, 7, 7, 8, 9],
        [-1, -1, -1, -1, -1, 2],
    ]
    assert rows["rewards"].tolist() == [0.5, -0.25, 1.5]


def test_rows_have_the_dtypes_and_shapes_areal_checks():
    rows = pad_rows(TURNS, [0.5, -0.25, 1.5])
    assert check_trajectory_format(rows)
    assert rows["input_ids"].dtype == torch.int32
    assert rows["attention_mask"].dtype == torch.bool
    assert rows["loss_mask"].dtype == torch.int32
    assert rows["logprobs"].dtype == torch.float32
    assert rows["versions"].dtype == torch.int32
    assert rows["rewards"].dtype == torch.float32 and rows["rewards"].shape == (3,)


def test_a_single_row_has_no_padding():
    rows = pad_rows(TURNS[1:2], [1.0])
    assert rows["input_ids"].shape == (1, 6) and rows["attention_mask"].all()


def test_turn_keeps_the_engine_data_as_arrays():
    t = TURNS[1]
    assert t.prompt_ids.tolist() == [31, 32] and t.output_ids.tolist() == [
        41,
        42,
        43,
        44,
    ]
    assert t.versions.tolist() == [7, 7, 8, 9] and t.logprobs.dtype == np.float32
    assert (t.stop_reason, t.latency, t.trainable, len(t)) == ("stop", 0.5, True, 6)


@pytest.mark.parametrize(
    "logprobs, versions", [([-1.0], [1, 1]), ([-1.0, -1.0], [1]), ([], [])]
)
def test_a_response_with_mismatched_lengths_is_refused(logprobs, versions):
    with pytest.raises(ValueError, match="mismatched lengths"):
        turn([1], [2, 3], logprobs, versions)


def test_one_reward_per_turn():
    with pytest.raises(ValueError, match="3 turns but 2 rewards"):
        pad_rows(TURNS, [0.0, 1.0])

"""The service's pieces on their own: OpenAI's request read into a question and
a document, the reply's and the stream's shapes, the API key, the bind check
and admission (cap, queue, 429, a cancelled waiter leaving the queue)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memagent_workflow.serve.admission import Admission
from memagent_workflow.serve.auth import check_authorization, check_bind, is_loopback
from memagent_workflow.serve.engine import EngineDown, cause, engine_failure
from memagent_workflow.serve.reply import answer_pieces
from memagent_workflow.serve.shapes import ServeError, parse_chat_request
from tests.unit.malformed import json_values

MODEL = "memagent"


def parse(messages, **body):
    return parse_chat_request({"model": MODEL, "messages": messages, **body}, MODEL)


def refused(body, status=400) -> ServeError:
    with pytest.raises(ServeError) as err:
        parse_chat_request(body, MODEL)
    assert err.value.status == status
    return err.value


def test_the_last_user_message_is_the_question_and_the_ones_before_the_document():
    req = parse(
        [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "part one"},
            {"role": "assistant", "content": [{"type": "text", "text": "part two"}]},
            {"role": "user", "content": "what is it?"},
        ]
    )
    assert req.question == "what is it?"
    assert req.document == "part one\n\npart two"  # the system message is not read
    assert req.document_param == "messages" and not req.stream and not req.trace


def test_the_document_may_come_as_an_extension_field_but_not_twice():
    req = parse(
        [{"role": "user", "content": "q?"}],
        memagent={"document": "the text", "trace": True},
        stream=True,
        stream_options={"include_usage": True},
    )
    assert (req.document, req.document_param) == ("the text", "memagent.document")
    assert req.trace and req.stream and req.include_usage
    twice = {
        "model": MODEL,
        "messages": [
            {"role": "user", "content": "doc"},
            {"role": "user", "content": "q"},
        ],
        "memagent": {"document": "doc"},
    }
    assert refused(twice).param == "memagent.document"


def test_temperature_zero_is_greedy_and_other_sampling_is_passed_on():
    msgs = [{"role": "user", "content": "d"}, {"role": "user", "content": "q"}]
    assert parse(msgs, temperature=0).sampling == {"greedy": True}
    assert parse(msgs, temperature=0.5, top_p=0.9).sampling == {
        "greedy": False,
        "temperature": 0.5,
        "top_p": 0.9,
    }
    assert parse(msgs).sampling == {}  # the config's gconfig


@pytest.mark.parametrize(
    "body, param",
    [
        ([1], None),
        ({"messages": []}, "model"),
        ({"model": MODEL, "messages": []}, "messages"),
        ({"model": MODEL, "messages": [{"role": "user"}]}, "messages[0].content"),
        (
            {"model": MODEL, "messages": [{"role": "assistant", "content": "a"}]},
            "messages",
        ),
        ({"model": MODEL, "messages": [{"role": "user", "content": "q"}]}, "messages"),
        (
            {"model": MODEL, "messages": [{"role": "wizard", "content": "q"}]},
            "messages[0].role",
        ),
        ({"model": MODEL, "messages": [{"content": "q"}]}, "messages[0].role"),
        (
            {"model": MODEL, "messages": [{"role": "user", "content": 3}]},
            "messages[0].content",
        ),
        (
            {
                "model": MODEL,
                "messages": [{"role": "user", "content": [{"type": "image_url"}]}],
            },
            "messages[0].content[0]",
        ),
        ({"model": MODEL, "messages": [{"role": "user", "content": "q"}], "n": 2}, "n"),
        (
            {
                "model": MODEL,
                "messages": [{"role": "user", "content": "q"}],
                "temperature": 3,
            },
            "temperature",
        ),
        (
            {
                "model": MODEL,
                "messages": [{"role": "user", "content": "q"}],
                "stream": "yes",
            },
            "stream",
        ),
        (
            {
                "model": MODEL,
                "messages": [{"role": "user", "content": "q"}],
                "memagent": {"trace": 1},
            },
            "memagent.trace",
        ),
    ],
)
def test_a_bad_body_is_refused_naming_the_field(body, param):
    err = refused(body)
    assert err.param == param, err.message
    assert err.body()["error"]["type"] == "invalid_request_error"


def test_another_model_is_not_found():
    err = refused(
        {"model": "gpt-4o", "messages": [{"role": "user", "content": "q"}]}, 404
    )
    assert err.code == "model_not_found" and MODEL in err.message


@pytest.mark.parametrize("answer", ["", "x", "\\boxed{ red }", "a  b ", " lead"])
def test_the_answer_pieces_join_to_the_answer(answer):
    pieces = answer_pieces(answer)
    assert "".join(pieces) == answer and all(pieces)


def test_only_loopback_listens_without_a_key():
    assert all(
        map(is_loopback, ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
    )
    assert not any(map(is_loopback, ["0.0.0.0", "::", "10.1.2.3", "example.org"]))
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", "k")
    with pytest.raises(ValueError, match="MEMAGENT_API_KEY"):
        check_bind("0.0.0.0", None)


def test_a_missing_or_wrong_key_is_401():
    check_authorization(None, None)  # no key set: open (loopback)
    check_authorization("Bearer s3cret", "s3cret")
    for header in (
        None,
        "",
        "Bearer",
        "Basic s3cret",
        "Bearer s3cre",
        "Bearer s3cret2",
    ):
        with pytest.raises(ServeError) as err:
            check_authorization(header, "s3cret")
        assert err.value.status == 401 and err.value.code == "invalid_api_key"


def test_an_unreachable_engine_is_503_and_a_failing_one_502():
    payload = {"input_ids": list(range(5000))}
    gone = RuntimeError(
        f"Failed after 3 retries each. Payload: {payload}. Addr: 127.0.0.1:9. "
        "Endpoint: /generate. Last error: ClientConnectorError(ConnectionRefusedError"
        "(111, 'Connect call failed'))"
    )
    err = engine_failure(gone, "")
    assert err.status == 503 and err.code == "engine_unavailable"
    # in words, the address named; the payload and the repr only in the log
    assert err.message == "the model server at 127.0.0.1:9 refused the connection"
    broken = RuntimeError(
        "Failed after 3 retries each. Last error: ClientResponseError(500)"
    )
    assert engine_failure(broken, "").status == 502
    assert cause(ValueError("x" * 2000)) == (
        "the model server failed (ValueError)",
        False,
    )
    hung = EngineDown(
        "the model server at h:1 did not answer within 5 s", timed_out=True
    )
    assert (engine_failure(hung, "").status, engine_failure(hung, "").code) == (
        504,
        "engine_timeout",
    )


async def test_admission_caps_the_episodes_queues_the_rest_and_refuses_past_the_queue():
    adm = Admission(max_running=1, max_queued=1)
    order: list[str] = []
    release = asyncio.Event()

    async def request(name: str) -> None:
        async with adm.slot():
            order.append(name)
            await release.wait()

    first = asyncio.create_task(request("first"))
    await asyncio.sleep(0)
    second = asyncio.create_task(request("second"))
    await asyncio.sleep(0)
    assert (adm.running, adm.queued, order) == (1, 1, ["first"])
    with pytest.raises(ServeError) as err:
        async with adm.slot():
            pass
    assert err.value.status == 429 and int(err.value.headers["Retry-After"]) >= 1
    assert "serve.max_queue=1" in err.value.message
    second.cancel()  # a client that left while it waited
    await asyncio.gather(second, return_exceptions=True)
    assert adm.queued == 0
    third = asyncio.create_task(request("third"))
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(first, third)
    assert order == ["first", "third"] and (adm.running, adm.queued) == (0, 0)


async def test_a_cancelled_episode_frees_its_slot():
    adm = Admission(max_running=1, max_queued=0)
    started = asyncio.Event()

    async def hold() -> None:
        async with adm.slot():
            started.set()
            await asyncio.sleep(3600)

    task = asyncio.create_task(hold())
    await started.wait()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    async with adm.slot():  # would be 429 (no queue) were the slot still held
        assert adm.running == 1


JSON = json_values(allow_nan=False, key_size=8, max_leaves=12)  # a body holds no NaN
FIELDS = st.sampled_from(
    [
        "model",
        "messages",
        "n",
        "stream",
        "stream_options",
        "memagent",
        "temperature",
        "top_p",
    ]
)
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "tool", "x"]) | JSON},
    optional={"content": st.text(max_size=8) | JSON},
)


@settings(max_examples=300, deadline=None)
@given(
    body=st.fixed_dictionaries(
        {
            "model": st.just(MODEL) | JSON,
            "messages": st.lists(MESSAGE, max_size=4) | JSON,
        },
        optional={"x": JSON},
    ).flatmap(
        lambda base: st.dictionaries(FIELDS, JSON, max_size=3).map(
            lambda extra: {**base, **extra}
        )
    )
    | JSON
)
def test_any_body_is_read_or_refused_in_openais_error_body(body):
    # whatever a caller sends: a request, or a 4xx naming the field; never
    # another exception (a 500 from the service)
    try:
        req = parse_chat_request(body, MODEL)
    except ServeError as err:
        assert err.status in (400, 404) and err.body()["error"]["message"]
    else:
        assert req.question.strip() and req.document.strip()

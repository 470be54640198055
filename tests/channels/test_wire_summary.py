"""A forwarded answer's record read from its bytes (wire.read_summary) is what the whole
completion gives (wire.answer_fields), or it is not read that way at all.

With no plugin on the model channel, a chat completion asked without a stream reaches the agent
as the upstream's bytes, and its model step records only the tool calls' names, the finish
reason, the token counts and the model: those are read without decoding the rest. Whatever
shape an upstream answers in, the step must hold the same values (or the same error) as when
the completion was decoded whole.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoseval.channels.model.calls import ModelReply
from chaoseval.channels.model.wire import (
    answer_fields,
    decode_json,
    members_text,
    read_summary,
    with_text,
)
from chaoseval.model.clock import round6

scalars = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=6)
)
anything = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


def _maybe(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A field's usual shape, or any other JSON value in its place."""
    return value | anything


def _obj(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """An object with some of ``fields`` (each maybe odd) and a few others."""
    return st.fixed_dictionaries({}, optional={k: _maybe(v) for k, v in fields.items()}).flatmap(
        lambda d: st.dictionaries(st.text(max_size=3), anything, max_size=2).map(
            lambda extra: {**extra, **d}
        )
    )


function = _obj(name=st.text(max_size=5), arguments=st.text(max_size=5))
tool_call = _obj(id=st.text(max_size=3), type=st.just("function"), function=function)
message = _obj(role=st.just("assistant"), content=st.text(max_size=8),
               tool_calls=st.lists(tool_call, max_size=3))  # fmt: skip
choice = _obj(index=st.integers(0, 2), message=message, finish_reason=st.text(max_size=6))
usage = _obj(prompt_tokens=st.integers(0, 2**65), completion_tokens=st.integers(-5, 2**65),
             total_tokens=st.integers(0, 9))  # fmt: skip
completion = _obj(id=st.text(max_size=4), model=st.text(max_size=6),
                  choices=st.lists(choice, max_size=2), usage=usage)  # fmt: skip


def _outcome(fn: Any, *args: Any) -> Any:
    try:
        return ("value", repr(fn(*args)))
    except Exception as exc:  # the same error as the whole read, or none
        return ("error", type(exc).__name__)


@settings(max_examples=400, deadline=None)
@given(completion | anything, st.booleans())
def test_a_summary_records_what_the_whole_completion_records(value: Any, tight: bool) -> None:
    separators = (",", ":") if tight else (", ", ": ")
    raw = json.dumps(value, separators=separators).encode("utf-8", "surrogatepass")
    summary = read_summary(raw)
    if summary is None:
        return  # read whole, as before
    done = decode_json(raw)
    assert isinstance(done, dict)
    assert _outcome(summary.fields) == _outcome(answer_fields, done)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"choices":[{"message":{"tool_calls":[{"function":{"name":"a"}},{}]},'
        b'"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4},'
        b'"model":"m"}',
        b'{"model":null}', b'{"model":"a","model":"b"}', b"{}", b'{"choices":[]}',
        b'{"choices":[{}],"usage":{}}', b'{"usage":null,"choices":null}',
        b'{"choices":[{"message":{},"finish_reason":null}]}',
        b'{"choices":[{"message":{"tool_calls":[{"function":null}]}}]}',
    ],
)  # fmt: skip
def test_usual_and_edge_answers_are_summarized_alike(raw: bytes) -> None:
    summary = read_summary(raw)
    assert summary is not None
    assert summary.fields() == answer_fields(decode_json(raw))


@pytest.mark.parametrize(
    "raw",
    [
        b"[]", b"NaN", b'{"usage":{"prompt_tokens":"3"}}', b'{"usage":{"prompt_tokens":1.0}}',
        b'{"usage":{"prompt_tokens":true}}', b'{"choices":{}}', b'{"choices":[null]}',
        b'{"choices":[{"message":[]}]}', b'{"choices":[{"message":{"tool_calls":{}}}]}',
        b'{"choices":[{"message":{"tool_calls":[{"function":[]}]}}]}', b"\xef\xbb\xbf{}",
        b'{"usage":{"prompt_tokens":1E400}}', b"{",
    ],
)  # fmt: skip
def test_odd_answers_are_read_whole(raw: bytes) -> None:
    """Shapes whose record the whole read gives otherwise than the usual one (a conversion,
    a falsy value read as empty, an error) are left to it."""
    assert read_summary(raw) is None


def test_a_summarized_replys_completion_is_decoded_when_read_and_then_not_summarized() -> None:
    raw = b'{"model":"m","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}'
    summary = read_summary(raw)
    assert summary is not None
    reply = ModelReply(answer=raw, summary=summary)
    assert reply.summary is summary
    done = reply.completion
    assert done == json.loads(raw) and reply.completion is done
    assert reply.summary is None  # whoever read it may have changed it: read it whole
    reply.completion = {"choices": []}
    assert reply.completion == {"choices": []} and reply.summary is None
    with pytest.raises(TypeError):
        ModelReply()


@pytest.mark.parametrize("value", [0.7, 0.7000000000000001, -0.0, 0.0, 1, True, None, "é", 2**80])
def test_members_are_added_to_a_body_as_json_writes_them_even_from_its_cache(value: Any) -> None:
    for raw in (b"{}", b'{"a": 1}', b'{"a":1} \n'):
        for _ in range(2):  # the second from the cache of the last value written
            out = with_text(raw, members_text({"temperature": value}))
            head = raw.rstrip()[:-1]
            comma = "" if head.rstrip().endswith(b"{") else ", "
            text = json.dumps(value, ensure_ascii=False)
            assert out == head + f'{comma}"temperature": {text}}}'.encode()


@settings(max_examples=2000, deadline=None)
@given(st.floats(allow_nan=False) | st.integers(0, 2**24).map(lambda k: k / 2**20))
def test_a_steps_latency_is_rounded_as_round_rounds_it(seconds: float) -> None:
    """The model step's latencies are written by model.clock.round6: round(x, 6)'s float,
    exact binary ties (k / 2**20) included."""
    assert repr(round6(seconds)) == repr(round(seconds, 6))

"""The model channel's JSON shortcuts read exactly as the json module does.

``decode_json`` (msgspec first, json for what msgspec refuses) must give ``json.loads``'s
values, types included, or its error; ``read_top`` the same values for the members it reads,
or None where the body must be read whole.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoseval.channels.model.wire import (
    answer_bytes,
    body_hash,
    decode_json,
    dumps,
    fingerprint,
    read_json,
    read_top,
)

values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(-(10**40), 10**40)
    | st.floats()
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)


def _same(a: Any, b: Any) -> bool:
    """Equal, of the same types all the way down (1 is not 1.0, -0.0 is not 0.0, NaN is NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return repr(a) == repr(b)  # the same value; -0.0 and 0.0 apart, NaN as NaN
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@settings(max_examples=300, deadline=None)
@given(values, st.booleans(), st.booleans())
def test_decode_json_reads_what_json_loads_reads(value: Any, ascii_only: bool, tight: bool) -> None:
    separators = (",", ":") if tight else (", ", ": ")
    text = json.dumps(value, ensure_ascii=ascii_only, separators=separators)
    raw = text.encode("utf-8", "surrogatepass")  # a lone surrogate as a client may send it
    assert _same(decode_json(raw), json.loads(raw))


@pytest.mark.parametrize(
    "raw",
    [
        b"NaN", b"[Infinity, -Infinity]", b"1E400", b'"\\ud800"', b'"\xed\xa0\x80"',
        b"\xef\xbb\xbf{}", '{"a": "é"}'.encode("utf-16"), b'{"a":1,"a":2}', b"-0", b"-0.0",
        b"1" + b"0" * 4299, b"1" + b"0" * 5000, b"[1,2,]", b'{"a":"\xff"}', b'"\t"', b"",
        b'  {"a" : [ 1 , 2.5e-3 ] }  ', b"[" * 100 + b"]" * 100,
    ],
)  # fmt: skip
def test_decode_json_refuses_and_reads_the_odd_bodies_as_json_loads_does(raw: bytes) -> None:
    try:
        expected: Any = json.loads(raw)
    except ValueError as exc:
        with pytest.raises(type(exc)):
            decode_json(raw)
        return
    assert _same(decode_json(raw), expected)


@pytest.mark.parametrize(
    "raw, plain",
    [
        (b'{"t": 0.7, "p": 1.0, "z": -0.0, "n": 0.0001, "b": 1e15}', True),
        (b'{"t": 1e-05, "u": 1e16}', True),  # passed on as written: any reader reads the same
        (b'{"t": 1e999}', False),  # inf: out of msgspec's range, json reads it
        (b'{"t": NaN}', False),  # msgspec refuses it: json reads it
        (b'{"del": "a\x7fb", "\xc3\xa9": 1, "e": "\xf0\x9f\x98\x80 \xe2\x80\xa8 \\u200b"}', True),
        (b'"\xef\xbb\xbf{}"', True),
        (b"\xef\xbb\xbf{}", False),  # a BOM: json.loads reads past it, msgspec does not
    ],
)  # fmt: skip
def test_a_read_is_plain_only_where_any_reader_reads_the_bytes_alike(
    raw: bytes, plain: bool
) -> None:
    read, was_plain = read_json(raw)
    assert was_plain is plain
    assert _same(read, json.loads(raw))


def test_a_fingerprint_is_of_the_bytes_and_a_body_hash_of_the_value() -> None:
    raw = b'{"model": "m", "messages": []}'
    assert fingerprint(raw) == hashlib.sha256(raw).hexdigest()[:16]
    assert fingerprint(raw) != fingerprint(raw.replace(b": ", b":"))
    canonical = json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":"))
    assert body_hash(json.loads(raw)) == hashlib.sha256(canonical.encode()).hexdigest()[:16]


TOP = ("model", "messages", "tools", "stream", "stream_options", "temperature", "seed")
members = st.fixed_dictionaries(
    {},
    optional={
        "model": values,
        "messages": st.lists(values, max_size=4) | values,
        "tools": st.lists(values, max_size=4) | st.none(),
        "stream": st.sampled_from([False, True, None, 0]),
        "stream_options": values,
        "temperature": st.none() | st.floats(0, 2) | st.integers(0, 2),
        "seed": st.none() | st.integers(),
        "tool_choice": values,
        "max_tokens": values,
    },
)


@settings(max_examples=400, deadline=None)
@given(members, st.booleans())
def test_a_top_level_read_is_the_whole_reads_members_or_none(body: Any, ascii_only: bool) -> None:
    """read_top gives the whole read's members that the channel reads (the conversation and
    the tools as each item's bytes), or None exactly where the body must be read whole."""
    raw = json.dumps(body, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    top = read_top(raw)
    try:
        whole, plain = read_json(raw)
    except ValueError:  # a lone surrogate past UTF-8: neither reads it
        assert top is None
        return
    passable = (
        plain
        and "stream_options" not in whole
        and whole.get("stream", False) is False
        and None not in (whole.get("temperature", 0), whole.get("seed", 0))
        and all(isinstance(whole.get(k, []), list | None) for k in ("messages", "tools"))
    )
    if not passable:
        assert top is None
        return
    assert top is not None
    assert list(top) == [k for k in whole if k in TOP]  # in the body's order
    for key, value in top.items():
        if key in ("messages", "tools") and value is not None:
            assert _same([decode_json(bytes(item)) for item in value], whole[key])
        else:
            assert _same(value, whole[key])


@pytest.mark.parametrize(
    "raw",
    [
        b'{"messages": [{"content": "\xff"}]}',  # not UTF-8 inside an item: read whole, refused
        b'{"messages": "hi"}', b'{"tools": {}}', b"[]", b'{"stream": true}', b'{"seed": null}',
        b"\xef\xbb\xbf{}", b'{"messages": [NaN]}',
    ],
)  # fmt: skip
def test_a_top_level_read_leaves_the_odd_bodies_to_the_whole_read(raw: bytes) -> None:
    assert read_top(raw) is None


# What a completion chaoseval makes holds: no float that JSON cannot write (text may hold
# anything, a lone surrogate included).
answers = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**40), 10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)


@given(answers)
def test_an_answer_written_by_msgspec_reads_as_the_one_json_wrote(value: Any) -> None:
    """wire.answer_bytes writes an unplugged answer (msgspec's compact UTF-8): any reader
    reads the value json's text gave; where UTF-8 cannot hold a string, json's text itself."""
    written = answer_bytes(value)
    assert _same(json.loads(written), json.loads(dumps(value)))
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        assert written == dumps(value).encode()  # a lone surrogate: json's escapes


def test_a_lone_surrogate_in_an_answer_is_written_as_its_escape() -> None:
    assert answer_bytes({"content": "a\ud800b"}) == b'{"content": "a\\ud800b"}'
    assert answer_bytes({"content": "caf\u00e9"}) == '{"content":"caf\u00e9"}'.encode()

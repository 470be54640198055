"""The model channel's JSON shortcuts read and fingerprint exactly as the json module did.

``decode_json`` (msgspec first, json for what msgspec refuses) must give ``json.loads``'s
values, types included, or its error; ``request_hash`` must give the hash every journal
written before it holds (retries are matched, and replay compares, by it).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoseval.channels.model.wire import decode_json, read_json, request_hash

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


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=4), values, max_size=5))
def test_request_hash_is_the_hash_journals_hold(body: dict[str, Any]) -> None:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    assert request_hash(body) == hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _journal_hash(body: Any) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(max_size=4), values, max_size=5), st.booleans())
def test_a_plain_reads_hash_is_the_hash_journals_hold(body: Any, ascii_only: bool) -> None:
    """The server reads a request with read_json and hashes a plain read with msgspec's
    canonical text: the same hash as json's text of what json.loads reads."""
    raw = json.dumps(body, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    read, plain = read_json(raw)
    assert _same(read, json.loads(raw))
    assert request_hash(read, plain) == _journal_hash(json.loads(raw))


@pytest.mark.parametrize(
    "raw, plain",
    [
        (b'{"t": 0.7, "p": 1.0, "z": -0.0, "n": 0.0001, "b": 1e15}', True),
        (b'{"t": 1e-05}', False),  # msgspec would write 0.00001
        (b'{"t": 1e16}', False),  # msgspec would write 1e16, json 1e+16
        (b'{"t": 1e999}', False),  # inf: json writes Infinity
        (b'{"t": NaN}', False),  # msgspec refuses it: json reads it
        (b'{"del": "a\x7fb", "\xc3\xa9": 1, "e": "\xf0\x9f\x98\x80 \xe2\x80\xa8 \\u200b"}', True),
        (b'{"b": {"z": [1, {"y": 2, "x": 3}]}, "a": [], "\xc3\xa0": {}, "A": null}', True),
        (b'"\xef\xbb\xbf{}"', True),
        (b"\xef\xbb\xbf{}", False),  # a BOM: json.loads reads past it, msgspec does not
    ],
)  # fmt: skip
def test_a_read_is_plain_only_where_msgspec_writes_what_json_writes(
    raw: bytes, plain: bool
) -> None:
    read, was_plain = read_json(raw)
    assert was_plain is plain
    assert _same(read, json.loads(raw))
    assert request_hash(read, was_plain) == _journal_hash(json.loads(raw))

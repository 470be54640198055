"""The model server's request reading, fast paths against their general forms.

``ModelServer._channel_of`` picks the trial's key and the retry header from one dict of the
scope's headers; ``limits.read_bounded`` takes a body that came in one message without its
loop; a body's ``\\u`` escapes are looked for with a regex. Each must give what the general
reading gives: starlette's ``Headers`` (the first of each name) for the key, the loop's outcome
(the body, or the same refusal) for a body, ``bytes.find`` for an escape.
"""

from __future__ import annotations

from typing import Any

import anyio
from hypothesis import given
from hypothesis import strategies as st
from starlette.datastructures import Headers

from chaoseval.channels.limits import BodyTooLarge, read_bounded
from chaoseval.channels.model.channel import RETRY_HEADER
from chaoseval.channels.model.resent import escaped
from chaoseval.channels.model.server import ModelServer

NAMES = st.sampled_from([b"authorization", b"x-api-key", RETRY_HEADER.encode(), b"host", b"accept"])
VALUES = st.sampled_from([b"Bearer t1", b"bearer t2", b"BEARER t1", b"Basic x", b"t1", b"t2",
                          b"", b"Bearer ", b"0", b"3", b"\xe9t1"])  # fmt: skip


@given(st.lists(st.tuples(NAMES, VALUES), max_size=8))
def test_the_key_and_retry_read_as_starlette_headers_read_them(headers: Any) -> None:
    server = ModelServer()
    channels = {token: object() for token in ("t1", "t2", "", "x")}
    server.channels = channels  # type: ignore[assignment]
    read = Headers(raw=headers)
    expected = (server._channel(read), read.get(RETRY_HEADER, ""))
    assert server._channel_of(headers) == expected


@given(st.lists(st.sampled_from([b"\\", b"u", b"\\u", b'"', b"a", b"\xc3\xa9", b"\\\\u"])))
def test_an_escape_is_found_where_bytes_find_finds_it(parts: list[bytes]) -> None:
    raw = b"".join(parts)
    assert (escaped(raw) is None) == (raw.find(b"\\u") < 0)


def _read(messages: list[dict[str, Any]], limit: int, declared: int | None) -> Any:
    headers = [] if declared is None else [(b"content-length", str(declared).encode())]
    scope: dict[str, Any] = {"type": "http", "headers": headers}
    pending = list(messages)

    async def receive() -> dict[str, Any]:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def main() -> Any:
        try:
            body, replay = await read_bounded(scope, receive, limit)
        except BodyTooLarge as exc:
            return ("refused", exc.size, exc.limit)
        again = await replay()
        return (body, again)

    return anyio.run(main)


@given(
    st.binary(max_size=40),
    st.integers(0, 50),
    st.one_of(st.none(), st.integers(0, 60)),
    st.integers(1, 4),
)
def test_a_body_in_one_message_reads_as_the_same_body_in_parts(
    body: bytes, limit: int, declared: int | None, parts: int
) -> None:
    """One message (the fast path) and the same bytes in ``parts`` messages (the loop) give the
    same body and replay, or the same refusal."""
    whole = [{"type": "http.request", "body": body, "more_body": False}]
    cut = [body[i * len(body) // parts : (i + 1) * len(body) // parts] for i in range(parts)]
    pieces = [{"type": "http.request", "body": c, "more_body": i < parts - 1}
              for i, c in enumerate(cut)]  # fmt: skip
    assert _read(whole, limit, declared) == _read(pieces, limit, declared)


def test_a_declared_size_over_the_limit_is_refused_even_in_one_small_message() -> None:
    message = {"type": "http.request", "body": b"{}", "more_body": False}
    assert _read([message], 10, 20) == ("refused", 20, 10)


def test_a_client_gone_before_its_body_gets_none() -> None:
    assert _read([{"type": "http.disconnect"}], 10, None)[0] is None

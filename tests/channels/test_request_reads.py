"""The model server's request reading, fast paths against their general forms.

``ModelServer._channel_of`` picks the trial's key, the retry header and the body's declared
length from one dict of the scope's headers; ``limits.read_bounded`` (and the model server
itself) takes a body that came in one message without its loop; a body's ``\\u`` escapes
are looked for with a regex. Each must give what the general reading gives: starlette's
``Headers`` (the first of each name) for the key, the loop's outcome (the body, or the same
refusal) for a body, ``bytes.find`` for an escape.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from hypothesis import given
from hypothesis import strategies as st
from model_support import probe_trial
from starlette.datastructures import Headers

from chaoseval.channels.limits import BodyTooLarge, _declared, read_bounded
from chaoseval.channels.model.channel import RETRY_HEADER
from chaoseval.channels.model.resent import escaped
from chaoseval.channels.model.server import ModelServer
from chaoseval.channels.model.session import trial_endpoint
from chaoseval.seams.agent import Episode

NAMES = st.sampled_from([b"authorization", b"x-api-key", RETRY_HEADER.encode(), b"host", b"accept",
                         b"content-length"])  # fmt: skip
VALUES = st.sampled_from([b"Bearer t1", b"bearer t2", b"BEARER t1", b"Basic x", b"t1", b"t2",
                          b"", b"Bearer ", b"0", b"3", b"\xe9t1", b" 12 ", b"-1"])  # fmt: skip


@given(st.lists(st.tuples(NAMES, VALUES), max_size=8))
def test_the_key_retry_and_length_read_as_the_general_forms_read_them(headers: Any) -> None:
    server = ModelServer()
    channels = {token: object() for token in ("t1", "t2", "", "x")}
    server.channels = channels  # type: ignore[assignment]
    read = Headers(raw=headers)
    expected = (server._channel(read), read.get(RETRY_HEADER, ""), _declared({"headers": headers}))
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


LIMIT = 4096  # bytes: the trial's request limit in the server tests below


def _serve_chat(messages: list[list[dict[str, Any]]], declared: list[int | None]) -> Any:
    """Each request's messages through the model server's app in process (a trial's key,
    chaoseval-sim): what it answered, and the model steps the trial recorded."""
    answers: list[Any] = []

    async def body(episode: Episode) -> None:
        async with trial_endpoint(episode) as endpoint:
            app = _current_server()  # the server the trial's channel is registered on
            auth = (b"authorization", f"Bearer {endpoint.api_key}".encode())
            for parts, length in zip(messages, declared, strict=True):
                pending = list(parts)
                sent: list[dict[str, Any]] = []

                async def receive(pending: list[dict[str, Any]] = pending) -> dict[str, Any]:
                    return pending.pop(0) if pending else {"type": "http.disconnect"}

                async def send(message: dict[str, Any], sent: list[Any] = sent) -> None:
                    sent.append(message)

                headers = [auth] + ([] if length is None else
                                    [(b"content-length", str(length).encode())])  # fmt: skip
                scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions",
                         "headers": headers, "query_string": b"", "root_path": ""}  # fmt: skip
                await app(scope, receive, send)
                status = sent[0]["status"]
                answer = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))
                answers.append((status, answer.get("error", {}).get("code")))

    record = probe_trial(body, request_limit=LIMIT)
    steps = [(s.kind, s.tool, s.args, s.result_class) for s in record.trajectory.steps]
    return answers, steps


def _current_server() -> Any:
    from chaoseval.channels.model.session import _CURRENT

    channels = _CURRENT.get()
    assert channels is not None
    return channels.server


CHAT = json.dumps({"model": "m", "messages": [{"role": "user", "content": "Say hi."}]}).encode()


def test_the_model_server_reads_a_body_in_one_message_as_the_same_body_in_parts() -> None:
    """The server takes a body that came whole in one message at once (its fast path), and
    a body in parts through read_bounded: the same answers and the same record; a declared
    length over the limit is refused, though the body came whole (read_bounded's refusal)."""
    one = [{"type": "http.request", "body": CHAT, "more_body": False}]
    half = len(CHAT) // 2
    parts = [{"type": "http.request", "body": CHAT[:half], "more_body": True},
             {"type": "http.request", "body": CHAT[half:], "more_body": False}]  # fmt: skip
    fast = _serve_chat([one, one], [len(CHAT), None])
    slow = _serve_chat([parts, parts], [len(CHAT), None])
    assert fast == slow
    assert [a[0] for a in fast[0]] == [200, 200]
    over = _serve_chat([one], [LIMIT + 1])
    assert over[0] == [(413, "request_too_large")]
    assert [(k, t) for k, t, _, _ in over[1] if k != "answer"] == [("note", "oversized_request")]

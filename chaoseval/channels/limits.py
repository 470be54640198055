"""Bounded requests: no server chaoseval runs holds more than the run's limit of one body.

Every server reads a request's body through :func:`bounded_body` before its app sees it: the
body is read as it streams in and kept only while it is within the limit (a ``Content-Length``
over it is refused without reading a byte into memory). Over the limit, the rest is read and
thrown away (up to :data:`DRAIN_LIMIT`, so the client is reading when its answer comes, as an
HTTP client that writes the whole body before it reads expects), and the server answers 413 in
its own API's shape. The trial records the agent's oversized request as a ``note`` step
(:func:`record_oversized`): the agent's behaviour, judged with the rest, not a harness error.
"""

from __future__ import annotations

from typing import Any

from starlette.types import Message, Receive, Scope

from chaoseval.model import untrusted

DEFAULT_REQUEST_LIMIT = 8 << 20  # bytes of one request body (--max-request-size)
DRAIN_LIMIT = 256 << 20  # bytes of an oversized body read and dropped before answering
OVERSIZED = "oversized_request"  # the note step's ``tool``
# Scope key: the limit the body was already read within. An app mounted under another that
# bounded the request (the hub's HTTP tools) gets its replay as it is, not a second read.
BOUNDED = "chaoseval.bounded_body"


class BodyTooLarge(Exception):
    """A request body over the limit: ``size`` bytes seen (at least), ``limit`` allowed."""

    def __init__(self, size: int, limit: int):
        self.size = size
        self.limit = limit
        super().__init__(
            f"request body of {'more than ' if size > DRAIN_LIMIT else ''}{size} bytes is over "
            f"this run's limit of {limit} bytes (--max-request-size)"
        )


def _declared(scope: Scope) -> int | None:
    for name, value in scope.get("headers") or ():
        if name == b"content-length":
            return declared_length(value)
    return None


def declared_length(value: bytes | None) -> int | None:
    """A ``Content-Length`` header's value as a number (None: absent, or not a number)."""
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def whole_body(message: Message, declared: int | None, limit: int) -> bytes | None:
    """The body, where ``message`` (a request's first) holds all of it and it is within
    ``limit`` (``declared``: the request's Content-Length, if it has one): the usual
    request, whose body uvicorn hands over in one message when it came in one read. Else
    None: the body is read by :func:`read_bounded`, as it streams in."""
    if message["type"] == "http.request" and not message.get("more_body", False):
        part = message.get("body", b"")
        if type(part) is bytes and len(part) <= limit and (declared is None or declared <= limit):
            return part
    return None


async def bounded_body(scope: Scope, receive: Receive, limit: int) -> Receive:
    """Read the request's body, at most ``limit`` bytes of it; a ``receive`` that hands the
    app the body read, then the connection's own messages (a disconnect).

    Raises :class:`BodyTooLarge` once the rest of an oversized body has been dropped."""
    if scope.get(BOUNDED, limit + 1) <= limit:
        return receive  # read within this limit already: ``receive`` replays it
    return (await read_bounded(scope, receive, limit))[1]


async def read_bounded(scope: Scope, receive: Receive, limit: int) -> tuple[bytes | None, Receive]:
    """:func:`bounded_body`'s read, for an app that takes the body itself: the body (None: the
    client went away before its end) and the ``receive`` that replays it to an app that asks.

    Raises :class:`BodyTooLarge` once the rest of an oversized body has been dropped."""
    message = await receive()
    declared = _declared(scope)
    # The usual request read without the loop below: the same outcome as its first pass.
    part = whole_body(message, declared, limit)
    if part is not None:
        scope[BOUNDED] = limit
        return part, replay([{"type": "http.request", "body": part, "more_body": False}],
                             receive)  # fmt: skip
    size = 0
    chunks: list[bytes] = []  # (``list[bytes]()`` raised and swallowed an error per request)
    over = declared is not None and declared > limit
    while True:
        if message["type"] != "http.request":
            if over:  # the client went away mid-body: it gets no answer anyway
                raise BodyTooLarge(max(size, declared or 0), limit)
            return None, replay([message], receive)
        part = message.get("body", b"")
        size += len(part)
        if not over and size > limit:
            over, chunks = True, []  # what was kept goes: nothing of it is used
        if not over and part:
            chunks.append(part)
        if not message.get("more_body", False):
            break
        if over and size > DRAIN_LIMIT:
            break  # the server closes the connection after its answer: the client is told
        message = await receive()
    if over:
        raise BodyTooLarge(max(size, declared or 0), limit)
    body = b"".join(chunks)
    scope[BOUNDED] = limit
    return body, replay([{"type": "http.request", "body": body, "more_body": False}], receive)


def replay(messages: list[Message], receive: Receive) -> Receive:
    """A ``receive`` that hands out ``messages`` first, then the connection's own."""

    async def replayed() -> Message:
        if messages:
            return messages.pop(0)
        return await receive()

    return replayed


def record_oversized(state: Any, clock: Any, channel: str, path: str, error: BodyTooLarge) -> None:
    """The agent's oversized request, as a step of its trial (``state``: its TrialState)."""
    state.trajectory.add_step(
        "note",
        t=clock.monotonic(),
        tool=OVERSIZED,
        args={"channel": channel, "path": path},
        result={"status": 413, "bytes": error.size, "limit": error.limit},
        result_class="http_error",
        error=str(error),
    )


def deep_message(limit: int = untrusted.MAX_DEPTH) -> str:
    """What a server answers to a request body nested past ``limit`` levels."""
    return (
        f"request body is JSON nested deeper than {limit} levels: refused, not read "
        "(send the arguments with less nesting)"
    )


def record_deep(state: Any, clock: Any, channel: str, path: str) -> None:
    """The agent's request body nested too deep to take (untrusted.deeper), as a step of its
    trial: a 400 the agent was answered, judged with the rest, never a harness error."""
    state.trajectory.add_step(
        "note",
        t=clock.monotonic(),
        tool=untrusted.DEEP_REQUEST,
        args={"channel": channel, "path": path},
        result={"status": 400, "limit": untrusted.MAX_DEPTH},
        result_class="http_error",
        error=deep_message(),
    )

"""The model channel's HTTP server: an OpenAI-compatible API on 127.0.0.1 (Starlette, uvicorn).

One server serves every trial of a run; the API key a request carries (``Authorization:
Bearer`` or ``x-api-key``) is the trial's token and picks its channel, so concurrent trials
never mix. Faults are written as the wire shows them: an HTTP error with its headers, a
request held until the client gives up, a connection dropped after part of a body, a stream
cut in the middle of a tool call.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from chaoseval.channels.asgi import HOST, serve_asgi
from chaoseval.channels.limits import (
    BOUNDED,
    BodyTooLarge,
    declared_length,
    deep_message,
    read_bounded,
    record_deep,
    record_oversized,
    replay,
    whole_body,
)
from chaoseval.channels.model import anthropic, responses
from chaoseval.channels.model.calls import (
    Endpoint,
    ModelHang,
    ModelHTTPFault,
    ModelReply,
    ModelReset,
    WireFault,
)
from chaoseval.channels.model.channel import RETRY_HEADER, Exchange, TrialModelChannel
from chaoseval.channels.model.shapes import ANTHROPIC, CHAT, Shape, responses_shape
from chaoseval.channels.model.sim import SIM_MODEL
from chaoseval.channels.model.wire import Cut, answer_bytes, dumps, error_body, read_json
from chaoseval.engine.http import ERROR_HEADER
from chaoseval.errors import HarnessError, UpstreamError
from chaoseval.model import untrusted

EXCHANGES = "chaoseval.exchanges"  # scope key: the exchanges a request made, for its timing
CHANNEL = "chaoseval.model.channel"  # scope key: the trial channel the request's key named
RETRY = "chaoseval.model.retry"  # scope key: the request's retry-count header ("" if none)
_RETRY = RETRY_HEADER.encode()
_CHAT_PATH = "/v1/chat/completions"
HANG_POLL = 0.02  # seconds between checks that a held request's client is still there


class ConnectionDropped(Exception):
    """Raised inside a response on purpose: uvicorn closes the connection mid-body."""


class ModelServer:
    """The run's model-channel server: channels by token, and the ASGI app serving them."""

    def __init__(self) -> None:
        self.channels: dict[str, TrialModelChannel] = {}
        self.port = 0
        # A trial's POST is served by _serve (the body already read, translated at once);
        # the app's routes answer the rest: a request with no trial's key (401), a
        # wrong method (405), an unknown path (404), /v1/models.
        self._posts: dict[str, Callable[[dict[str, Any]], Translated]] = {
            _CHAT_PATH: _chat,
            "/v1/responses": _responses,
            "/v1/messages": _messages,
        }
        self.app = Starlette(
            routes=[
                *(Route(path, self._refused, methods=["POST"]) for path in self._posts),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    def register(self, channel: TrialModelChannel) -> None:
        self.channels[channel.token] = channel

    def unregister(self, token: str) -> None:
        channel = self.channels.pop(token, None)
        if channel is not None:
            channel.close()

    def channel_for(self, request: Request) -> TrialModelChannel | None:
        """The request's trial channel (looked up once, as the request came in)."""
        found = request.scope.get(CHANNEL)
        return found if isinstance(found, TrialModelChannel) else self._channel(request.headers)

    def _channel(self, headers: Headers) -> TrialModelChannel | None:
        auth = headers.get("authorization", "")
        token = auth[7:] if auth.lower().startswith("bearer ") else headers.get("x-api-key")
        return self.channels.get(token or "")

    def _channel_of(
        self, headers: list[tuple[bytes, bytes]]
    ) -> tuple[TrialModelChannel | None, str, int | None]:
        """``_channel(Headers(scope=scope))``, the client's retry count (the header's text,
        "" when absent) and the body's declared length (limits.declared_length) from the
        scope's headers: the first of each name, as Headers.get reads them (the reversed
        list's last), picked out by one dict made in C rather than a comparison of every
        header with each name in Python."""
        first = dict(reversed(headers))
        auth, retry = first.get(b"authorization"), first.get(_RETRY)
        told = "" if retry is None else retry.decode("latin-1")
        declared = declared_length(first.get(b"content-length"))
        if auth is not None:
            text = auth.decode("latin-1")
            if text[:7].lower() == "bearer ":
                return self.channels.get(text[7:]), told, declared
        key = first.get(b"x-api-key")
        channel = self.channels.get("" if key is None else key.decode("latin-1"))
        return channel, told, declared

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The app, behind the trial's request size limit (known from the key, before the
        body is read: a request with no trial's key is refused without reading it)."""
        started = time.perf_counter()
        channel, declared = None, None
        if scope["type"] == "http":
            channel, scope[RETRY], declared = self._channel_of(scope["headers"])
        if channel is None:
            await self.app(scope, receive, send)
            return
        # The channel's own time, measured: from the request's arrival to its last byte
        # written (reading and parsing the body, translating it, the plugins' bookkeeping,
        # forwarding, rendering and writing the answer), less what is not ours: the
        # upstream's own time and what the faults injected (delays, hangs). The agent's time
        # between requests is never inside.
        exchanges: list[Exchange] = []
        scope[EXCHANGES] = exchanges
        scope[CHANNEL] = channel
        try:
            await self._serve(channel, scope, receive, send, declared)
        finally:
            others = 0.0
            for e in exchanges:
                others += e.upstream_seconds + e.injected_seconds
            channel.link.state.add_overhead(time.perf_counter() - started - others)

    async def _serve(
        self,
        channel: TrialModelChannel,
        scope: Scope,
        receive: Receive,
        send: Send,
        declared: int | None,
    ) -> None:
        state, path = channel.link.state, scope["path"]
        translate = self._posts.get(path) if scope["method"] == "POST" else None
        limit = state.request_limit
        # A trial's POST to an endpoint whose body came whole in its first message (as a rule)
        # takes it from there, with ``receive`` as it is: nothing after reads the body again.
        # Else the body is read as limits.read_bounded reads it (from that message on), and
        # the app is handed its replay.
        message = await receive()
        raw = whole_body(message, declared, limit) if translate is not None else None
        try:
            if raw is None:
                raw, receive = await read_bounded(scope, replay([message], receive), limit)
            else:
                scope[BOUNDED] = limit
        except BodyTooLarge as exc:
            record_oversized(state, channel.link.world.clock, "model", path, exc)
            if path.endswith("/messages"):
                refusal = anthropic.error_body(413, str(exc))
            else:
                refusal = error_body(str(exc), "invalid_request_error", "request_too_large")
            await JSONResponse(refusal, 413)(scope, receive, send)
            return
        if translate is None:
            await self.app(scope, receive, send)
            return
        # A trial's request to an endpoint: its body (read above) translated and run at once
        # (the app's middleware and routing only add work here: errors inside are answered by
        # exchange_response; a 404, 405 or /v1/models takes the app).
        if raw is None:  # the client went away mid-body: starlette's ClientDisconnect, as ever
            raw = await Request(scope, receive).body()
        # A chat request's bytes can stand for its body for a channel that passes them on (no
        # plugin, forwarding) where they hold no \u escape (what the agent relays reaches the
        # upstream as characters, never escapes: docs/ADVERSARIAL.md, Through the wire) and
        # the read is plain; then it is read only as far as its step records it, and only
        # where it grew since a request it repeats (resent.ConversationReader). Else the body
        # is read whole and encoded anew.
        top, digest, passes = None, None, False
        if channel.reader is not None and path == _CHAT_PATH:
            top, digest, passes = channel.reader.read(raw)
        opened = _open(path, raw, top, channel)
        if isinstance(opened, Response):
            await opened(scope, receive, send)
            return
        body, plain = opened
        endpoint, chat, shape = translate(body)
        sent = raw if passes and plain else None
        response = await exchange_response(channel, endpoint, chat, scope, receive, shape, raw,
                                           sent, digest)  # fmt: skip
        await response(scope, receive, send)

    async def _refused(self, request: Request) -> Response:
        return _unauthorized()

    async def _models(self, request: Request) -> Response:
        if self.channel_for(request) is None:
            return _unauthorized()
        return JSONResponse(
            {
                "object": "list",
                "data": [{"id": SIM_MODEL, "object": "model", "owned_by": "chaoseval"}],
            }
        )


# A request body as the channel takes it: its API, the chat body, how to write the answer.
Translated = tuple[Endpoint, dict[str, Any], Shape]


def _chat(body: dict[str, Any]) -> Translated:
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    return "chat", body, CHAT[include_usage]


def _responses(body: dict[str, Any]) -> Translated:
    return "responses", responses.to_chat(body), responses_shape(body)


def _messages(body: dict[str, Any]) -> Translated:
    return "messages", anthropic.to_chat(body), ANTHROPIC


def _open(
    path: str, raw: bytes, top: dict[str, Any] | None, channel: TrialModelChannel
) -> tuple[dict[str, Any], bool] | Response:
    """The request's JSON body and whether msgspec read it (wire.read_json), or the refusal
    to answer with (``path``: the request's, for its API's error shape). ``top``: its
    top-level members where they were read alone (wire.read_top), all its step needs.
    A body nested past what the parsers take is the agent's: a 400 and a note step."""
    body: Any = top
    plain = body is not None
    problem = "body is not a JSON object"
    if body is None:
        try:
            body, plain = read_json(raw)
        except untrusted.TooDeep:
            return _too_deep(channel, path)
        except ValueError:
            body, plain = None, False
    if isinstance(body, dict):
        bad = _bad_sampling(body)
        if bad is None:
            return body, plain
        problem = bad
    return _refusal(path, problem)


def _refusal(path: str, problem: str) -> Response:
    """400 in the API's shape (``path``: the request's)."""
    if path.endswith("/messages"):
        return JSONResponse(anthropic.error_body(400, problem), 400)
    return JSONResponse(error_body(problem, "invalid_request_error"), 400)


def _too_deep(channel: TrialModelChannel, path: str) -> Response:
    record_deep(channel.link.state, channel.link.world.clock, "model", path)
    return _refusal(path, deep_message())


def _bad_sampling(body: dict[str, Any]) -> str | None:
    """Why the request's sampling settings are not what every API accepts, else None.

    A real endpoint answers 400 to ``"temperature": {...}``; so does this one, before the
    value reaches the sim (``float()`` of it raised inside the app: a 500 that SDKs retry as
    a server fault) or the journal (where a dict as a sampling value broke every reader)."""
    temperature, seed, model = body.get("temperature"), body.get("seed"), body.get("model")
    usual = temperature is None or type(temperature) in _NUMBER
    if usual and (seed is None or type(seed) is int) and (model is None or type(model) is str):
        return None  # the usual case, at once
    if model is not None and not isinstance(model, str):
        # Its step records it: a list nested 300 deep there was a record no reader took.
        return f"model must be a string, not {type(model).__name__}"
    for key, kinds in (("temperature", (int, float)), ("seed", (int,))):
        value = body.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, kinds)):
            kind = "a number" if key == "temperature" else "an integer"
            return f"{key} must be {kind} or absent, not {json.dumps(value)[:80]}"
    return None


_NUMBER = (int, float)


async def exchange_response(
    channel: TrialModelChannel,
    endpoint: Endpoint,
    body: dict[str, Any],
    scope: Scope,
    receive: Receive,
    shape: Shape,
    received: bytes,
    raw: bytes | None = None,
    digest: str | None = None,
) -> Response:
    """Run one request through the channel and write what the agent gets (``scope`` and
    ``receive``: the request's, its body read; ``received``: the body's bytes as they came;
    ``raw``: the same where they can stand for ``body``; ``digest``: their fingerprint where
    it is known; TrialModelChannel.begin). No starlette Request is made unless a hang must
    watch for the client's going (a few thousand instructions a request)."""
    retry = scope.get(RETRY)
    if retry is None:  # read from the scope's headers in ModelServer.__call__, else here
        retry = Headers(scope=scope).get(RETRY_HEADER, "")
    exchange = channel.begin(endpoint, body, retry, received, raw, digest)
    scope.setdefault(EXCHANGES, []).append(exchange)  # for ModelServer's timing
    try:
        reply = await channel.run(exchange)
    except ModelHTTPFault as fault:
        channel.finish(exchange, status=fault.status, result_class="http_error", error=str(fault))
        return JSONResponse(shape.error(fault), fault.status, headers=fault.headers)
    except ModelHang as fault:
        held = time.perf_counter()
        await _hold(channel, Request(scope, receive))
        exchange.injected_seconds += time.perf_counter() - held
        channel.finish(exchange, status=0, result_class="timeout", error=str(fault))
        return Response(status_code=504)
    except ModelReset as fault:
        channel.finish(exchange, status=0, result_class="connection_reset", error=str(fault))
        return _DroppedResponse()
    except WireFault as fault:  # a third-party fault kind: the nearest wire shape, a 500
        channel.finish(exchange, status=500, result_class="http_error", error=str(fault))
        return JSONResponse(shape.error(ModelHTTPFault(500, str(fault))), 500)
    except RecursionError as exc:  # nesting past Python's stack: the agent's, if it sent it
        if not untrusted.deeper(received):
            return _harness_error(channel, exchange, shape, exc)
        channel.finish(exchange, status=400, result_class="http_error", error=deep_message())
        return _too_deep(channel, scope["path"])
    except Exception as exc:  # whatever else broke, it is not the agent's doing
        return _harness_error(channel, exchange, shape, exc)
    if exchange.call.stream:
        events = shape.stream(reply.completion, reply.cut_mid_tool_call)
        return StreamingResponse(
            _stream(channel, exchange, reply, events), media_type="text/event-stream"
        )
    if reply.first_token_delay:
        await _delay(exchange, reply.first_token_delay)
    raw = exchange.call.answer_bytes
    if shape.verbatim and channel.unplugged and raw is not None:
        # A forwarded answer no plugin could have changed: written as the upstream sent it
        # (its bytes, not a re-encoding of their parse).
        rendered = raw
    elif channel.unplugged:  # chaoseval's own answer: msgspec writes it (wire.answer_bytes)
        rendered = answer_bytes(shape.render(reply.completion))
    else:  # a plugin's: json writes whatever it put there, as it always did
        rendered = dumps(shape.render(reply.completion)).encode()
    if reply.cut_mid_tool_call:  # a non-streaming answer cut short: half a JSON body
        channel.finish(exchange, status=200, result_class="connection_reset", reply=reply)
        return _DroppedResponse(rendered)
    channel.finish(exchange, status=200, result_class=_result_class(reply), reply=reply)
    return _JSONBytes(rendered)


def _harness_error(
    channel: TrialModelChannel, exchange: Exchange, shape: Shape, exc: Exception
) -> Response:
    """chaoseval, a plugin or the model endpoint broke: the trial's harness error (not
    evaluable, never the agent's failure), and a gateway's answer to the agent: 502 when the
    endpoint failed, else 500, marked ``X-Chaoseval-Error: harness_error``."""
    error = (
        exc
        if isinstance(exc, HarnessError)
        else HarnessError(f"model channel: internal error: {type(exc).__name__}: {exc}")
    )
    channel.link.state.harness_errors.append(error)
    status = 502 if isinstance(error, UpstreamError) else 500
    channel.finish(exchange, status=status, result_class="harness_error", error=str(error))
    body = shape.error(ModelHTTPFault(status, str(error)))
    return JSONResponse(body, status, headers={ERROR_HEADER: "harness_error"})


async def _stream(
    channel: TrialModelChannel, exchange: Exchange, reply: ModelReply, events: list[bytes | Cut]
) -> AsyncIterator[bytes]:
    try:
        await _delay(exchange, reply.first_token_delay)
        for i, event in enumerate(events):
            if isinstance(event, Cut):
                channel.finish(exchange, status=200, result_class="connection_reset", reply=reply)
                raise ConnectionDropped("stream cut in the middle of a tool call")
            if i:
                await _delay(exchange, reply.chunk_delay)
            yield event
    finally:
        # Written in full, or the client went away mid-stream: either way it got these bytes.
        channel.finish(exchange, status=200, result_class=_result_class(reply), reply=reply)


async def _delay(exchange: Exchange, seconds: float) -> None:
    """An injected delay, counted apart from the channel's own time."""
    if seconds:
        started = time.perf_counter()
        await anyio.sleep(seconds)
        exchange.injected_seconds += time.perf_counter() - started


async def _hold(channel: TrialModelChannel, request: Request) -> None:
    """Answer nothing until the client gives up or the trial ends."""
    while not channel.closed.is_set():
        if await request.is_disconnected():
            return
        with anyio.move_on_after(HANG_POLL):
            await channel.closed.wait()


class _JSONBytes(Response):
    """``Response(body, media_type="application/json")``: the same headers, in the same order,
    made without starlette's generic rendering and header checks."""

    media_type = "application/json"

    def __init__(self, body: bytes) -> None:
        self.status_code = 200
        self.background = None
        self.body = body
        self.raw_headers = [
            (b"content-length", str(len(body)).encode()),
            (b"content-type", b"application/json"),
        ]


class _DroppedResponse(Response):
    """Headers promising a body, part of it, then the connection closes."""

    def __init__(self, partial: bytes = b"") -> None:
        super().__init__(status_code=200, media_type="application/json")
        self.partial = partial[: len(partial) // 2]
        self.promised = max(len(partial), 64)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(self.promised).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": self.partial, "more_body": True})
        raise ConnectionDropped("connection dropped mid-body")


def _result_class(reply: ModelReply) -> str:
    return "malformed" if reply.malformed else "ok"


def _unauthorized() -> Response:
    return JSONResponse(
        error_body(
            "unknown API key: not a trial of this run", "invalid_request_error", "invalid_api_key"
        ),
        401,
    )


def _deliberate(record: logging.LogRecord) -> bool:
    """uvicorn logs an app that raised mid-response; a drop we made on purpose is no error."""
    return not (record.exc_info and isinstance(record.exc_info[1], ConnectionDropped))


logging.getLogger("uvicorn.error").addFilter(_deliberate)


@asynccontextmanager
async def serve_model_channel() -> AsyncIterator[ModelServer]:
    """Start the model-channel server on a free 127.0.0.1 port for the duration of a run."""
    server = ModelServer()
    async with serve_asgi(server) as url:
        server.port = int(url.rsplit(":", 1)[1])
        try:
            yield server
        finally:
            for token in list(server.channels):
                server.unregister(token)

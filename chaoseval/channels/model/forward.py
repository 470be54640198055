"""A real model upstream: requests (after the plugins) forwarded to an OpenAI-compatible API.

``--model-endpoint URL`` points here: OpenAI, vLLM, Ollama, LiteLLM. The key comes from the
environment variable the run names and goes upstream only; agents are given their trial's
token instead. The upstream is asked for a whole completion even when the agent streams: the
channel streams it to the agent itself, so a stream can be cut where a fault says.

The hop is aiohttp's client, one session (a keep-alive connection pool, TCP_NODELAY on every
connection) for the whole run: it costs the channel's event loop about a fifth of the CPU per
request that httpx's pool did (make bench: bench_wire, "model channel, forwarding"). A request
is sent once, as before: no retry here (the agent's SDK retries what the upstream refuses).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from chaoseval import redact
from chaoseval.channels.model.calls import ModelCall, ModelHTTPFault, ModelReply
from chaoseval.channels.model.wire import decode_json, dumps, dumps_utf8, read_summary
from chaoseval.errors import ConfigError, UpstreamError
from chaoseval.redact import add_secret

PASSED_HEADERS = ("retry-after", "retry-after-ms", "x-should-retry")
POOL = 100  # connections kept to the upstream at most (httpx's default, and aiohttp's)


class ForwardUpstream:
    """Forwards chat-completions bodies to ``base_url`` + ``/chat/completions``."""

    # Given the agent's own request bytes where they can stand for the body (ModelCall.raw:
    # no plugin on the channel, the settings it applied added at their end), it sends them
    # rather than an encoding of their parse.
    sends_bytes = True

    def __init__(self, base_url: str, key: str | None, session: aiohttp.ClientSession):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._proxy = _env_proxy(self.url)
        self._headers = {"Content-Type": "application/json"}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._session = session

    async def complete(self, call: ModelCall) -> dict[str, Any]:
        return (await self.complete_reply(call, False)).completion

    async def complete_reply(self, call: ModelCall, summarize: bool) -> ModelReply:
        """The upstream's answer as a reply (TrialModelChannel._base). ``summarize``: only
        the step's record will read the completion (the agent is written its bytes): then
        the record's fields are read from the bytes (wire.read_summary) and the completion
        is decoded only if something asks for it."""
        data = call.raw
        if data is None:
            body = {k: v for k, v in call.body.items() if k not in ("stream", "stream_options")}
            data = _encode(body)
        # The exchange on the wire (from handing the bytes to the client to the body read): the
        # upstream's share. Encoding the body and decoding the answer are the channel's
        # forwarding cost, counted in channel_overhead.
        started = time.perf_counter()
        post = self._session.post(self.url, data=data, headers=self._headers, **self._proxy)
        try:
            async with post as response:
                raw = await response.read()
                status, headers = response.status, response.headers
        except (aiohttp.ClientError, TimeoutError) as exc:
            # Refused, reset, timed out: the infrastructure failed, not the agent (the trial
            # is recorded not evaluable; the agent is answered 502 as a gateway would).
            raise UpstreamError(f"model endpoint {self.url}: {_reason(exc)}") from exc
        call.upstream_seconds = time.perf_counter() - started
        if status >= 400:
            # The upstream's own error reaches the agent as it was (not a chaoseval fault).
            text = raw.decode("utf-8", "replace")
            try:
                message = str(json.loads(text)["error"]["message"])
            except (ValueError, KeyError, TypeError):
                message = redact.head(text, 500) or f"upstream returned {status}"
                # an upstream may echo the key: redacted before it is cut
            passed = {h: headers[h] for h in PASSED_HEADERS if h in headers}
            raise ModelHTTPFault(status, message, headers=passed)
        if summarize:
            summary = read_summary(raw)
            if summary is not None:
                call.answer_bytes = raw
                return ModelReply(answer=raw, summary=summary)
        done = _completion(self.url, status, raw)
        call.answer_bytes = raw
        return ModelReply(completion=done)


@asynccontextmanager
async def forward_upstream(
    base_url: str, key_env: str = "OPENAI_API_KEY", timeout: float = 120.0
) -> AsyncIterator[ForwardUpstream]:
    """A forwarding upstream for a run; the key is read from ``key_env`` (may be unset for a
    local server that needs none). ``timeout`` bounds connecting and each wait for the
    upstream's bytes (not a whole completion, which may take long to generate)."""
    if not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"--model-endpoint must be an http(s) URL, not {base_url!r}")
    key = os.environ.get(key_env)
    add_secret(key)  # whatever the variable is called, its value is never written
    # httpx's per-phase timeouts, as before: a free connection (or a new one) within
    # ``timeout``, and no wait for the upstream's next bytes longer than it.
    limits = aiohttp.ClientTimeout(total=None, connect=timeout, sock_read=timeout)
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=POOL, limit_per_host=0),
        timeout=limits,
        # The environment's proxy is read once (_env_proxy): trust_env would look it up (and
        # netrc, which httpx never read) in a thread, twice a request.
        trust_env=False,
        # No cookies carried from one trial's answer into another trial's request.
        cookie_jar=aiohttp.DummyCookieJar(),
    ) as session:
        yield ForwardUpstream(base_url, key, session)


def _completion(url: str, status: int, raw: bytes) -> dict[str, Any]:
    """A 2xx answer's completion; anything but a JSON object is the endpoint's failure."""
    try:
        done = decode_json(raw)
    except ValueError:
        done = None
    if not isinstance(done, dict):
        raise UpstreamError(
            f"model endpoint {url} answered {status} with a body that is not a JSON"
            f" object: {redact.head(raw.decode('utf-8', 'replace'), 200)!r}"
        )
    return done


def _reason(exc: BaseException) -> str:
    """What went wrong in words: aiohttp's timeouts say nothing of themselves."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _env_proxy(url: str) -> dict[str, Any]:
    """The proxy ``*_PROXY``/``NO_PROXY`` name for ``url``, as httpx honoured them."""
    try:
        proxy, auth = get_env_proxy_for_url(URL(url))
    except LookupError:  # none set, or NO_PROXY covers the host
        return {}
    return {"proxy": proxy, "proxy_auth": auth}


def _encode(body: dict[str, Any]) -> bytes:
    """The request as UTF-8 JSON, as the agent's SDK sent it (openai's, httpx's): what it relays
    (a tool result, planted text and zero-width characters included) reaches the upstream as
    the same characters, never ``\\u`` escapes of them (docs/ADVERSARIAL.md, Through the wire).
    A lone surrogate has no UTF-8 form: then JSON's escapes, which any upstream reads alike."""
    try:
        return dumps_utf8(body).encode()
    except UnicodeEncodeError:
        return dumps(body).encode()

"""A real model upstream: requests (after the plugins) forwarded to an OpenAI-compatible API.

``--model-endpoint URL`` points here: OpenAI, vLLM, Ollama, LiteLLM. The key comes from the
environment variable the run names and goes upstream only; agents are given their trial's
token instead. The upstream is asked for a whole completion even when the agent streams: the
channel streams it to the agent itself, so a stream can be cut where a fault says.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from chaoseval import redact
from chaoseval.channels.model.calls import ModelCall, ModelHTTPFault
from chaoseval.errors import ConfigError
from chaoseval.redact import add_secret

PASSED_HEADERS = ("retry-after", "retry-after-ms", "x-should-retry")


class ForwardUpstream:
    """Forwards chat-completions bodies to ``base_url`` + ``/chat/completions``."""

    def __init__(self, base_url: str, key: str | None, client: httpx.AsyncClient):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = client

    async def complete(self, call: ModelCall) -> dict[str, Any]:
        body = {k: v for k, v in call.body.items() if k not in ("stream", "stream_options")}
        response = await self._client.post(self.url, json=body, headers=self._headers)
        # The exchange on the wire (httpx: from handing the request to the transport to the
        # body read): the upstream's share. Encoding the body and decoding the answer are the
        # channel's forwarding cost, counted in channel_overhead.
        call.upstream_seconds = response.elapsed.total_seconds()
        if response.status_code >= 400:
            # The upstream's own error reaches the agent as it was (not a chaoseval fault).
            try:
                message = str(response.json()["error"]["message"])
            except (ValueError, KeyError, TypeError):
                message = redact.head(response.text, 500) or (
                    f"upstream returned {response.status_code}"
                )  # an upstream may echo the key: redacted before it is cut
            headers = {h: response.headers[h] for h in PASSED_HEADERS if h in response.headers}
            raise ModelHTTPFault(response.status_code, message, headers=headers)
        done: dict[str, Any] = response.json()
        return done


@asynccontextmanager
async def forward_upstream(
    base_url: str, key_env: str = "OPENAI_API_KEY", timeout: float = 120.0
) -> AsyncIterator[ForwardUpstream]:
    """A forwarding upstream for a run; the key is read from ``key_env`` (may be unset for a
    local server that needs none)."""
    if not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"--model-endpoint must be an http(s) URL, not {base_url!r}")
    key = os.environ.get(key_env)
    add_secret(key)  # whatever the variable is called, its value is never written
    async with httpx.AsyncClient(timeout=timeout) as client:
        yield ForwardUpstream(base_url, key, client)

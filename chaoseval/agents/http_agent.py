"""Reference agents whose tools are HTTP APIs, called with httpx.

``http-naive`` and ``http-resilient`` are the ``naive`` and ``resilient`` simulated harnesses
with one difference: every tool call is an HTTP request. By default the trial's tools are served
on 127.0.0.1 by :func:`chaoseval.engine.http.serve_tools`; pass ``transport=`` to route them
through a respx router (:func:`chaoseval.engine.http.mock_tools`) or any other httpx transport
instead. Either way the tool perturbations reach the agent as HTTP: 429/5xx with Retry-After,
HTML bodies, dropped connections, gateway timeouts."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import httpx

from chaoseval.agents.simulated import ResilientActor, SimActor, SimulatedAgent
from chaoseval.engine.http import HttpTools, serve_tools
from chaoseval.model.records import AgentOutput
from chaoseval.seams.agent import Episode, ToolChannel, agent

TransportFactory = Callable[[ToolChannel], httpx.AsyncBaseTransport]
MOCK_BASE = "http://tools.test"


class HttpAgent:
    """Runs a simulated harness with ``episode.tools`` replaced by an httpx client."""

    clock = "virtual"  # waits (Retry-After, backoff) are the trial clock's; HTTP I/O is local

    def __init__(
        self,
        actor_cls: type[SimActor],
        transport: TransportFactory | None = None,
        timeout: float = 30.0,
        slips: bool = True,
    ):
        self.actor_cls = actor_cls
        self.slips = slips
        self.transport = transport
        self.timeout = timeout

    @asynccontextmanager
    async def _client(self, toolbox: ToolChannel) -> AsyncIterator[httpx.AsyncClient]:
        if self.transport is not None:
            async with httpx.AsyncClient(
                base_url=MOCK_BASE, transport=self.transport(toolbox), timeout=self.timeout
            ) as client:
                yield client
            return
        # Plain HTTP on 127.0.0.1: skip building a TLS context (tens of ms per client).
        transport = httpx.AsyncHTTPTransport(verify=False)
        async with (
            serve_tools(toolbox) as url,
            httpx.AsyncClient(base_url=url, transport=transport, timeout=self.timeout) as client,
        ):
            yield client

    async def run(self, episode: Episode) -> AgentOutput:
        async with self._client(episode.tools) as client:
            over_http = dataclasses.replace(episode, tools=HttpTools(client, episode.tools))
            return await SimulatedAgent(self.actor_cls, self.slips).run(over_http)


@agent("http-naive")
def http_naive(slips: bool = True) -> HttpAgent:
    return HttpAgent(SimActor, slips=slips)


@agent("http-resilient")
def http_resilient(slips: bool = True) -> HttpAgent:
    return HttpAgent(ResilientActor, slips=slips)

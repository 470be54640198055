"""Every kind of server chaoseval runs, each started through its own entry point for one
trial: the tests that must hold for all of them (TCP_NODELAY, the body limit) probe these."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

from chaoseval.channels.browser.server import serve_pages
from chaoseval.channels.hub import ToolHub, TrialUrls
from chaoseval.channels.model.session import ModelEndpoint, trial_endpoint
from chaoseval.engine.http import serve_tools
from chaoseval.seams.agent import Episode


@dataclass(frozen=True)
class Servers:
    hub: TrialUrls  # the run's tool hub: the trial's MCP endpoint and HTTP tools
    tools: str  # HTTP tools on a server of their own
    model: ModelEndpoint  # the model channel
    page: str  # the page server (scenarios with a UI)


@asynccontextmanager
async def all_servers(episode: Episode) -> AsyncIterator[Servers]:
    async with AsyncExitStack() as stack:
        hub = await stack.enter_async_context(ToolHub.serving())
        urls = await stack.enter_async_context(hub.trial(episode.tools))  # type: ignore[arg-type]
        tools = await stack.enter_async_context(serve_tools(episode.tools))
        model = await stack.enter_async_context(trial_endpoint(episode))
        page = await stack.enter_async_context(serve_pages(episode))
        yield Servers(urls, tools, model, page)

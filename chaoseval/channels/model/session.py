"""A trial's model endpoint: register the trial's channel on the run's server, hand out its
base URL and key, and close it when the trial ends."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

from chaoseval.channels.model.channel import TrialLink, TrialModelChannel, Upstream
from chaoseval.channels.model.prices import Prices
from chaoseval.channels.model.server import ModelServer, serve_model_channel
from chaoseval.channels.model.sim import sim_upstream
from chaoseval.seams.agent import Episode


@dataclass(frozen=True)
class ModelEndpoint:
    """What an agent is told: where its model is and the key that names its trial."""

    base_url: str
    api_key: str
    channel: TrialModelChannel


@asynccontextmanager
async def trial_endpoint(
    episode: Episode,
    server: ModelServer | None = None,
    upstream: Upstream | None = None,
    prices: Prices | None = None,
) -> AsyncIterator[ModelEndpoint]:
    """The trial's model channel, on ``server`` (or a server of its own when none is running).

    ``upstream`` defaults to ``chaoseval-sim`` driven by this trial's simulated policy.
    """
    async with AsyncExitStack() as stack:
        if server is None:
            server = await stack.enter_async_context(serve_model_channel())
        if upstream is None:
            upstream = await stack.enter_async_context(sim_upstream(episode))
        token = "sk-chaoseval-" + secrets.token_hex(16)
        channel = TrialModelChannel(token, TrialLink.from_episode(episode), upstream, prices=prices)
        server.register(channel)
        try:
            yield ModelEndpoint(server.base_url, token, channel)
        finally:
            server.unregister(token)

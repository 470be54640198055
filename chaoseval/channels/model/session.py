"""The model channel's lifetimes: the run's server (and forwarding upstream), and a trial's
endpoint on it (base URL and API key), closed when the trial ends."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from chaoseval.channels.model.channel import TrialModelChannel, Upstream, trial_link
from chaoseval.channels.model.forward import forward_upstream
from chaoseval.channels.model.prices import Prices
from chaoseval.channels.model.server import ModelServer, serve_model_channel
from chaoseval.channels.model.sim import sim_upstream
from chaoseval.errors import ConfigError
from chaoseval.seams.agent import Episode


@dataclass(frozen=True)
class ModelEndpoint:
    """What an agent is told: where its model is and the key that names its trial."""

    base_url: str  # OpenAI style, ending in /v1
    api_key: str
    channel: TrialModelChannel

    @property
    def anthropic_base_url(self) -> str:
        """The Anthropic SDK adds /v1/messages itself."""
        return self.base_url.removesuffix("/v1")


@dataclass(frozen=True)
class UpstreamConfig:
    """Where requests go: ``chaoseval-sim`` (no endpoint) or a real OpenAI-compatible API."""

    endpoint: str | None = None
    key_env: str = "OPENAI_API_KEY"
    prices: Prices | None = None


@dataclass(frozen=True)
class RunChannels:
    server: ModelServer
    config: UpstreamConfig
    upstream: Upstream | None  # shared by the run's trials; None: a chaoseval-sim per trial


# The run's channels, set by ``run_channels``; trials started without one open their own.
_CURRENT: ContextVar[RunChannels | None] = ContextVar("chaoseval_model_channels", default=None)


@asynccontextmanager
async def run_channels(config: UpstreamConfig | None = None) -> AsyncIterator[RunChannels]:
    """One server (and forwarding client) for every trial of a run."""
    config = config or UpstreamConfig()
    async with AsyncExitStack() as stack:
        upstream = None
        if config.endpoint:
            upstream = await stack.enter_async_context(
                forward_upstream(config.endpoint, config.key_env)
            )
        server = await stack.enter_async_context(serve_model_channel())
        channels = RunChannels(server, config, upstream)
        token = _CURRENT.set(channels)
        try:
            yield channels
        finally:
            _CURRENT.reset(token)


@asynccontextmanager
async def trial_endpoint(
    episode: Episode, config: UpstreamConfig | None = None
) -> AsyncIterator[ModelEndpoint]:
    """The trial's model channel on the run's server (or on channels of its own when no run
    has opened them, e.g. an agent run by hand)."""
    async with AsyncExitStack() as stack:
        channels = _CURRENT.get()
        if channels is None:
            channels = await stack.enter_async_context(run_channels(config))
        upstream = channels.upstream
        if upstream is None:
            upstream = await stack.enter_async_context(sim_upstream(episode))
        token = "sk-chaoseval-" + secrets.token_hex(16)
        link = trial_link(episode)
        channel = TrialModelChannel(
            token, link, upstream, prices=channels.config.prices, settings=episode.model
        )
        channels.server.register(channel)
        try:
            yield ModelEndpoint(channels.server.base_url, token, channel)
        finally:
            channels.server.unregister(token)


def use_upstream(agent: object, config: UpstreamConfig) -> None:
    """Point a wire agent's model channel at ``config`` (``--model-endpoint``)."""
    if not hasattr(agent, "upstream"):
        raise ConfigError(
            f"--model-endpoint needs an agent that calls its model over the wire "
            f"(openai-naive, openai-resilient, exec:COMMAND); {type(agent).__name__} does not"
        )
    setattr(agent, "upstream", config)  # noqa: B010 - any wire agent, not one class

"""Reference agents on the real protocol: tool loops written with the ``openai`` SDK.

``openai-naive`` and ``openai-resilient`` talk to their model over HTTP through the trial's
model channel (``chaoseval-sim`` by default), as any agent built on the OpenAI SDK does; their
tools run through ``episode.tools``. They differ the way real harnesses do:

- ``openai-naive``: no SDK retries, trusts tool-call arguments and tool results, and lets any
  error (model or tool) end the episode;
- ``openai-resilient``: SDK retries (honouring ``retry-after-ms``), re-sends a request whose
  stream was cut, tells the model about arguments that are not JSON and tools never offered,
  retries transient tool errors with tenacity (honouring Retry-After), validates results
  against the tool's schema, hands lasting tool errors to the model, and gives up gracefully
  when the model service stays down.

The model's final message is JSON (``answer``, ``gave_up``, ``data``) when it can be parsed,
else the text is the answer. In a conversational scenario both offer the model ``ask_user``
(chaoseval.engine.askuser), run through ``episode.user`` as the tool servers run it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import openai
from tenacity import RetryCallState

from chaoseval.agents.simulated import resilient_call
from chaoseval.channels.model.calls import ModelAnswerUnusable, ModelCallFailed
from chaoseval.channels.model.session import UpstreamConfig, run_channels, trial_endpoint
from chaoseval.channels.model.toolresults import error_content, result_content
from chaoseval.engine import askuser
from chaoseval.errors import (
    AgentVisibleError,
    ToolError,
)
from chaoseval.model.records import AgentOutput
from chaoseval.seams.agent import Episode, agent

SYSTEM = (
    "You are an operations agent. Use the tools to complete the task. When you are done, reply "
    'with JSON: {"answer": "...", "gave_up": false, "data": {}}.'
)


class OpenAIAgent:
    """A chat-completions tool loop on ``AsyncOpenAI``, pointed at the trial's model channel."""

    clock = "virtual"  # tools and their faults run on the trial clock; model I/O is real

    def __init__(
        self,
        *,
        resilient: bool,
        stream: bool = False,
        max_retries: int | None = None,
        timeout: float = 10.0,
        max_turns: int = 40,
        upstream: UpstreamConfig | None = None,
    ):
        self.resilient = resilient
        self.stream = stream
        self.max_retries = max_retries if max_retries is not None else (3 if resilient else 0)
        self.timeout = timeout
        self.max_turns = max_turns
        self.upstream = upstream or UpstreamConfig()

    @asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """One model-channel server for every trial of a run (entered by the runner)."""
        async with run_channels(self.upstream):
            yield

    async def run(self, episode: Episode) -> AgentOutput:
        async with trial_endpoint(episode, self.upstream) as endpoint:
            client = openai.AsyncOpenAI(
                base_url=endpoint.base_url,
                api_key=endpoint.api_key,
                max_retries=self.max_retries,
                timeout=self.timeout,
            )
            async with client:
                loop = ToolLoop(self, client, episode)
                return await loop.run()


class ToolLoop:
    """One episode's conversation: ask the model, run the tools it calls, until it answers."""

    def __init__(self, agent: OpenAIAgent, client: openai.AsyncOpenAI, episode: Episode):
        self.agent = agent
        self.client = client
        self.episode = episode
        notes = "".join(f"\nRemembered: {m.key} = {m.value}" for m in episode.memory)
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM + notes},
            {"role": "user", "content": episode.instruction},
        ]
        self.tools = [
            {
                "type": "function",
                "function": {
                    "name": d["name"],
                    "description": d.get("description") or "",
                    "parameters": d["parameters"],
                },
            }
            for d in self._described()
        ]

    def _described(self) -> list[Any]:
        """The scenario's tools, and ``ask_user`` when the episode has a user."""
        asks = [askuser.described()] if askuser.offered(self.specs, self.episode.user) else []
        return [*self.episode.tools.describe(), *asks]

    @property
    def specs(self) -> Any:
        return self.episode.tools.specs

    async def run(self) -> AgentOutput:
        for _ in range(self.agent.max_turns):
            message = await self.ask()
            if message is None:
                return self.give_up("the model service kept failing")
            calls = message.get("tool_calls") or []
            self.messages.append(message)
            if not calls:
                return self.final(message.get("content") or "")
            for call in calls:
                content = await self.run_tool(call)
                self.messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": content}
                )
        return self.give_up(f"no answer after {self.agent.max_turns} model turns")

    async def ask(self) -> dict[str, Any] | None:
        """The model's next message, or None when the resilient agent stops trying."""
        attempts = 3 if self.agent.resilient else 1
        for attempt in range(attempts):
            try:
                message = await self._request()
            except (openai.APIError, ModelAnswerUnusable) as exc:
                if not self.agent.resilient:
                    if isinstance(exc, openai.APIError):
                        raise ModelCallFailed(
                            f"{type(exc).__name__}: {exc}",
                            timed_out=isinstance(exc, openai.APITimeoutError),
                        ) from exc
                    raise
                if attempt == attempts - 1:
                    return None
                continue
            if message is not None:
                return message
        return None

    async def _request(self) -> dict[str, Any] | None:
        settings = self.episode.model
        kwargs: dict[str, Any] = {
            "model": settings.model,
            "messages": self.messages,
            "tools": self.tools,
            "temperature": settings.temperature,
        }
        if settings.seed is not None:
            kwargs["seed"] = settings.seed
        if self.agent.stream:
            return await self._streamed(kwargs)
        response = await self.client.chat.completions.create(**kwargs)
        if not response.choices:
            if self.agent.resilient:
                return None  # asked again by the caller
            raise ModelAnswerUnusable("the model returned no choices")
        return _as_dict(response.choices[0].message)

    async def _streamed(self, kwargs: dict[str, Any]) -> dict[str, Any] | None:
        content: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        stream = await self.client.chat.completions.create(
            **kwargs, stream=True, stream_options={"include_usage": True}
        )
        saw_choice = False
        async for chunk in stream:
            for choice in chunk.choices:
                saw_choice = True
                delta = choice.delta
                if delta.content:
                    content.append(delta.content)
                for tc in delta.tool_calls or []:
                    slot = calls.setdefault(
                        tc.index,
                        {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                    )
                    if tc.id:
                        slot["id"] = tc.id
                    if tc.function and tc.function.name:
                        slot["function"]["name"] = tc.function.name
                    if tc.function and tc.function.arguments:
                        slot["function"]["arguments"] += tc.function.arguments
        if not saw_choice:
            if self.agent.resilient:
                return None
            raise ModelAnswerUnusable("the model returned no choices")
        message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
        if calls:
            message["tool_calls"] = [calls[i] for i in sorted(calls)]
        return message

    async def run_tool(self, call: dict[str, Any]) -> str:
        fn = call.get("function") or {}
        name, raw = fn.get("name", ""), fn.get("arguments") or "{}"
        user = self.episode.user
        if name == askuser.ASK_USER and user is not None and askuser.offered(self.specs, user):
            try:
                return result_content(await askuser.ask(user, json.loads(raw)))
            except (ValueError, ToolError) as exc:
                return error_content(ToolError(str(exc)), "invalid_arguments")
        if not self.agent.resilient:
            try:
                args = json.loads(raw)  # trusts the model: bad JSON ends the episode
            except ValueError as exc:
                raise ModelAnswerUnusable(f"tool-call arguments are not JSON: {exc}") from exc
            try:
                return result_content(await self.episode.tools.call(name, **args))
            except ToolError as exc:  # the world's "no" is an answer; outages end the episode
                return error_content(exc)
        try:
            args = json.loads(raw)
            if not isinstance(args, dict):
                raise ValueError("arguments are not a JSON object")
        except ValueError as exc:
            return error_content(
                ToolError(f"arguments for {name} are not valid JSON: {exc}"), "invalid_arguments"
            )
        if name not in self.episode.tools.specs:
            return error_content(ToolError(f"there is no tool named {name!r}"), "unknown_tool")
        try:
            return result_content(await resilient_call(self.episode, name, args, 4, _backoff))
        except AgentVisibleError as exc:
            return error_content(exc)

    def final(self, content: str) -> AgentOutput:
        output = AgentOutput.from_json(content) or AgentOutput(answer=content)
        output.usage = self.episode.usage
        return output

    def give_up(self, reason: str) -> AgentOutput:
        return AgentOutput(answer=reason, gave_up=True, usage=self.episode.usage)


def _backoff(state: RetryCallState) -> float:
    return min(0.5 * 2.0 ** (state.attempt_number - 1), 8.0)


def _as_dict(message: Any) -> dict[str, Any]:
    data = message.model_dump(exclude_none=True)
    out: dict[str, Any] = {"role": "assistant", "content": data.get("content")}
    if data.get("tool_calls"):
        out["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": c["function"]}
            for c in data["tool_calls"]
        ]
    return out


@agent("openai-naive")
def openai_naive() -> OpenAIAgent:
    return OpenAIAgent(resilient=False)


@agent("openai-resilient")
def openai_resilient() -> OpenAIAgent:
    return OpenAIAgent(resilient=True, stream=True)

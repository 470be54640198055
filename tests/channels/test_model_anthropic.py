"""The Anthropic Messages API on the same channel, with the real ``anthropic`` SDK."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest
from model_support import Probe, info, model_steps, run_agent

from chaoseval.channels.model.session import trial_endpoint
from chaoseval.seams.agent import Episode


async def tool_loop(client: anthropic.AsyncAnthropic, episode: Episode, stream: bool) -> str:
    """A plain Messages-API tool loop, as an agent on the anthropic SDK writes it."""
    tools = [
        {"name": d["name"], "description": d["description"] or "", "input_schema": d["parameters"]}
        for d in episode.tools.describe()
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": episode.instruction}]
    for _ in range(20):
        kwargs: dict[str, Any] = dict(
            model="claude-test",
            max_tokens=1024,
            system="Use the tools.",
            messages=messages,
            tools=tools,
        )
        if stream:
            async with client.messages.stream(**kwargs) as events:
                message = await events.get_final_message()
        else:
            message = await client.messages.create(**kwargs)
        uses = [b for b in message.content if b.type == "tool_use"]
        if message.stop_reason != "tool_use":
            text = "".join(b.text for b in message.content if b.type == "text")
            return str(json.loads(text)["answer"])
        messages.append({"role": "assistant", "content": [b.model_dump() for b in message.content]})
        results = []
        for use in uses:
            result = await episode.tools.call(use.name, **use.input)
            results.append(
                {"type": "tool_result", "tool_use_id": use.id, "content": json.dumps(result)}
            )
        messages.append({"role": "user", "content": results})
    raise AssertionError("no answer")


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_sdk_agent_solves_a_bundled_scenario(stream: bool) -> None:
    async def body(episode: Episode) -> str:
        async with trial_endpoint(episode) as endpoint:
            client = anthropic.AsyncAnthropic(
                base_url=endpoint.anthropic_base_url, api_key=endpoint.api_key
            )
            async with client:
                return await tool_loop(client, episode, stream)

    (record,) = run_agent(Probe(body), trials=1)
    assert record.status == "passed", (record.root_cause, record.error)
    steps = model_steps(record)
    assert {info(s)["endpoint"] for s in steps} == {"messages"}
    assert info(steps[0])["stream"] is stream and info(steps[0])["tool_calls"]


def test_anthropic_sdk_sees_429_and_a_cut_stream() -> None:
    seen: list[str] = []

    async def body(episode: Episode) -> str:
        async with trial_endpoint(episode) as endpoint:
            client = anthropic.AsyncAnthropic(
                base_url=endpoint.anthropic_base_url, api_key=endpoint.api_key, max_retries=0
            )
            async with client:
                for stream in (False, True):
                    try:
                        await tool_loop(client, episode, stream)
                    except Exception as exc:  # what the SDK raises, whatever it is
                        seen.append(type(exc).__name__)
        return "probed"

    cell = "model_error:modes=[429,stream_cut],retry_after=0.01,probability=1"
    (record,) = [r for r in run_agent(Probe(body), cells=[cell], trials=1) if r.cell != "clean"]
    kinds = {f.kind: f.delivered for f in record.trajectory.faults}
    # A cut stream surfaces from the SDK's stream helper as the transport's own error.
    errors = {"RateLimitError", "APIConnectionError", "RemoteProtocolError"}
    assert set(seen) <= errors and len(seen) == 2, seen
    assert all(kinds.values())

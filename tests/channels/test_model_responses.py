"""``/v1/responses`` streamed to the real OpenAI SDK (``client.responses.stream`` and
``stream=True``), and the model-channel faults in the Responses API's own shapes."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from model_support import Probe, info, model_steps, run_agent

from chaoseval.channels.model.session import trial_endpoint
from chaoseval.channels.model.wire import is_json
from chaoseval.model.records import TrialRecord
from chaoseval.seams.agent import Episode


def _tools(episode: Episode) -> list[Any]:
    return [
        {"type": "function", "name": d["name"], "parameters": d["parameters"]}
        for d in episode.tools.describe()
    ]


async def _respond(client: openai.AsyncOpenAI, stream: bool, deltas: list[str], **request: Any):
    if not stream:
        return await client.responses.create(**request)
    async with client.responses.stream(**request) as events:
        async for event in events:
            if event.type == "response.function_call_arguments.delta":
                deltas.append(event.delta)
        return await events.get_final_response()


@pytest.mark.parametrize("stream", [False, True])
def test_a_responses_tool_loop_solves_a_bundled_scenario(stream: bool) -> None:
    """A tool loop on the Responses API (the Agents SDK's default). Streamed, the SDK's stream
    helper rebuilds each Response from our events (it refuses an event out of order or a
    missing ``response.completed``)."""
    deltas: list[str] = []

    async def body(episode: Episode) -> str:
        async with trial_endpoint(episode) as endpoint:
            client = openai.AsyncOpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key)
            items: list[Any] = [{"role": "user", "content": episode.instruction}]
            async with client:
                for _ in range(20):
                    response = await _respond(
                        client, stream, deltas, model="gpt-4o-mini", input=items,
                        tools=_tools(episode), temperature=0.7,
                    )  # fmt: skip
                    calls = [o for o in response.output if o.type == "function_call"]
                    if not calls:
                        return str(json.loads(response.output_text)["answer"])
                    for call in calls:
                        result = await episode.tools.call(call.name, **json.loads(call.arguments))
                        items.append(
                            {
                                "type": "function_call",
                                "call_id": call.call_id,
                                "name": call.name,
                                "arguments": call.arguments,
                            }
                        )
                        items.append(
                            {
                                "type": "function_call_output",
                                "call_id": call.call_id,
                                "output": json.dumps(result),
                            }
                        )
        raise AssertionError("no answer")

    (record,) = run_agent(Probe(body), trials=1)
    assert record.status == "passed", (record.root_cause, record.error)
    steps = model_steps(record)
    assert len(steps) > 2 and all(info(s)["stream"] is stream for s in steps)
    assert {info(s)["endpoint"] for s in steps} == {"responses"}
    assert info(steps[-1])["finish_reason"] == "stop"
    if stream:  # arguments arrived in pieces, not in one event
        assert len(deltas) >= len(steps) - 1


def _one_streamed_request(cell: str) -> tuple[TrialRecord, dict[str, Any]]:
    """One ``stream=True`` request (raw events, no helper) in a faulted cell; what came."""
    by_trial: dict[str, dict[str, Any]] = {}

    async def body(episode: Episode) -> str:
        assert episode.link is not None
        seen = by_trial[episode.link.trial_id] = {"types": [], "arguments": ""}
        async with trial_endpoint(episode) as endpoint:
            client = openai.AsyncOpenAI(
                base_url=endpoint.base_url, api_key=endpoint.api_key, max_retries=0
            )
            async with client:
                try:
                    events = await client.responses.create(
                        model="gpt-test",
                        input="Refund the order.",
                        tools=_tools(episode),
                        stream=True,
                    )
                    async for event in events:
                        seen["types"].append(event.type)
                        if event.type == "response.function_call_arguments.delta":
                            seen["arguments"] += event.delta
                        if event.type in ("response.completed", "response.incomplete"):
                            seen["final"] = event.response
                except (openai.APIError, openai.APIConnectionError) as exc:
                    seen["error"] = type(exc).__name__
                except Exception as exc:  # httpx's own error for a body cut short
                    seen["error"] = type(exc).__name__
        return "probed"

    record = run_agent(Probe(body), cells=[cell], trials=1)[-1]
    assert record.cell != "clean"
    return record, by_trial[record.trial_id]


def test_a_responses_stream_cut_mid_tool_call_is_delivered() -> None:
    record, seen = _one_streamed_request("model_error:modes=stream_cut,probability=1")
    assert "error" in seen and "response.completed" not in seen["types"]
    assert seen["types"][0] == "response.created"
    assert seen["arguments"] and not is_json(seen["arguments"])  # half a tool call arrived
    [fault] = record.trajectory.faults
    assert fault.kind == "stream_cut" and fault.delivered
    [step] = model_steps(record)
    assert step.result_class == "connection_reset" and step.faults == [0]


def test_malformed_modes_keep_their_meaning_in_responses_shapes() -> None:
    record, seen = _one_streamed_request("model_malformed:modes=invalid_json,probability=1")
    assert seen["types"][-1] == "response.completed"
    [call] = [o for o in seen["final"].output if o.type == "function_call"]
    assert seen["arguments"] == call.arguments and not is_json(call.arguments)
    assert record.trajectory.faults[0].delivered

    record, seen = _one_streamed_request("model_malformed:modes=unknown_tool,probability=1")
    [call] = [o for o in seen["final"].output if o.type == "function_call"]
    assert call.name not in {t.name for t in record.trajectory.tool_steps()} | {"lookup_order"}

    _, seen = _one_streamed_request("model_malformed:modes=no_finish_reason,probability=1")
    assert seen["types"][-1] == "response.incomplete"
    assert seen["final"].status == "incomplete"

    _, seen = _one_streamed_request("model_malformed:modes=empty_choices,probability=1")
    assert seen["final"].output == [] and seen["final"].status == "incomplete"

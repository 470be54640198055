"""chaoseval-sim reads a tool's outcome in every shape common clients send it, so the same
trial ends the same way whatever framework relays it.

Each shape is a tool loop on a real SDK (``openai`` chat completions and Responses,
``anthropic`` Messages) against the real channel on 127.0.0.1, relaying results and errors the
way a framework does (the error text is what chaoseval's MCP server writes for the fault,
which is what an MCP-based framework has to pass on). Every shape must give each trial the
bundled example's outcome: the same status and the same tool calls.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Awaitable, Callable
from typing import Any

import anthropic
import openai
import pytest
from model_support import model_steps, run_agent

from chaoseval.channels.mcp.server import error_text
from chaoseval.channels.model import anthropic as anthropic_api
from chaoseval.channels.model.observations import observation_for, read_content
from chaoseval.channels.model.session import ModelEndpoint, trial_endpoint
from chaoseval.errors import AgentVisibleError, ToolHTTPError
from chaoseval.model.records import AgentOutput, TrialRecord
from chaoseval.seams.agent import Episode

# A dependency that is down in the clean cell (a 503 the plan falls back on), and a scenario
# whose tools time out in the perturbed cell.
SCENARIOS = ["inventory-stock-service-down", "vending-refund-not-dispensed"]
CELLS = ["timeout:probability=0.5"]
SYSTEM = 'Use the tools. Reply with JSON: {"answer": "...", "gave_up": false, "data": {}}.'

Outcome = tuple[Any, AgentVisibleError | None]


async def run_tool(episode: Episode, name: str, arguments: str) -> Outcome:
    try:
        return await episode.tools.call(name, **json.loads(arguments or "{}")), None
    except AgentVisibleError as exc:
        return None, exc


def envelope(exc: AgentVisibleError) -> str:
    """The bundled example's error: the MCP text and the fault's fields from ``_meta``."""
    error: dict[str, Any] = {"message": error_text(exc), "kind": exc.kind}
    if isinstance(exc, ToolHTTPError):
        error.update(status=exc.status, retry_after=exc.retry_after)
    return json.dumps({"error": error})


def final(text: str | None) -> AgentOutput:
    parsed = json.loads(text or "{}")
    return AgentOutput(answer=parsed["answer"], gave_up=parsed.get("gave_up", False))


def chat_tools(episode: Episode) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": d["name"], "parameters": d["parameters"]}}
        for d in episode.tools.describe()
    ]


# --- chat completions: (assistant message, call, outcome) -> messages to append ------------

Relay = Callable[[dict[str, Any], Any, Outcome], list[dict[str, Any]]]


def _tool_message(call: Any, content: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call.id, "content": content}


def relay_example(assistant: dict[str, Any], call: Any, outcome: Outcome) -> list[dict[str, Any]]:
    value, exc = outcome
    content = envelope(exc) if exc else json.dumps(value)
    return [assistant, _tool_message(call, content)]


def relay_text_parts(assistant: dict[str, Any], call: Any, outcome: Outcome) -> list[Any]:
    """LangGraph with langchain-mcp-adapters: content blocks, an error's text unflagged."""
    value, exc = outcome
    text = error_text(exc) if exc else json.dumps(value)
    return [assistant, _tool_message(call, [{"type": "text", "text": text}])]


def relay_plain_text(assistant: dict[str, Any], call: Any, outcome: Outcome) -> list[Any]:
    """The Agents SDK on chat completions: the MCP result's text, error or not."""
    value, exc = outcome
    return [assistant, _tool_message(call, error_text(exc) if exc else json.dumps(value))]


def relay_error_string(assistant: dict[str, Any], call: Any, outcome: Outcome) -> list[Any]:
    """pydantic-ai: a failed return as ``{"error": "..."}``; the result as a JSON object."""
    value, exc = outcome
    if exc:
        return [assistant, _tool_message(call, json.dumps({"error": error_text(exc)}))]
    return [assistant, _tool_message(call, value)]


def relay_react(assistant: dict[str, Any], call: Any, outcome: Outcome) -> list[Any]:
    """smolagents' ToolCallingAgent: the call as assistant text, the outcome as a user turn
    ("Observation:" with ``str(result)``, or "Call id: ...\\nError:" for an error)."""
    value, exc = outcome
    made = [{"id": call.id, "type": "function", "function": {"name": call.function.name}}]
    said = {"role": "assistant", "content": [{"type": "text", "text": f"Calling tools:\n{made}"}]}
    if exc:
        text = f"Call id: {call.id}\nError:\n{error_text(exc)}\nNow let's retry."
    else:
        text = f"Observation:\n{value}"
    return [said, {"role": "user", "content": [{"type": "text", "text": text}]}]


def relay_react_unflagged(assistant: dict[str, Any], call: Any, outcome: Outcome) -> list[Any]:
    """smolagents over mcpadapt, which ignores ``isError``: every outcome an Observation."""
    value, exc = outcome
    said = {"role": "assistant", "content": f"Calling tools:\n[{{'id': '{call.id}'}}]"}
    text = error_text(exc) if exc else json.dumps(value)
    return [said, {"role": "user", "content": f"Observation:\n{text}"}]


FINAL_ANSWER_TOOL = {
    "type": "function",
    "function": {
        "name": "final_answer",
        "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}},
    },
}


def null_refused(arguments: dict[str, Any]) -> str | None:
    """smolagents' ToolCallingAgent checks a call's argument types itself: a null where the
    schema wants a string is refused before any tool runs, in a user turn that names no call
    (and no assistant turn records the call)."""
    nulls = [k for k, v in arguments.items() if v is None]
    if not nulls:
        return None
    return (
        f"Error:\nArgument {nulls[0]} has type 'null' but should be 'string'\nNow let's retry: "
        "take care not to repeat previous errors! If you have retried several times, try a "
        "completely different approach.\n"
    )


def chat_agent(
    relay: Relay, answer_tool: bool = False, refuse: Callable[..., str | None] | None = None
) -> Callable[..., Awaitable[AgentOutput]]:
    async def loop(episode: Episode, endpoint: ModelEndpoint) -> AgentOutput:
        client = openai.AsyncOpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key)
        tools = chat_tools(episode) + ([FINAL_ANSWER_TOOL] if answer_tool else [])
        messages: list[Any] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": episode.instruction},
        ]
        async with client:
            for _ in range(30):
                reply = await client.chat.completions.create(
                    model="m", messages=messages, tools=tools
                )
                message = reply.choices[0].message
                if not message.tool_calls:
                    return final(message.content)
                call = message.tool_calls[0]
                if call.function.name == "final_answer":
                    return final(json.loads(call.function.arguments)["answer"])
                refused = refuse(json.loads(call.function.arguments)) if refuse else None
                if refused is not None:  # merged into the last user turn, as smolagents does
                    last = messages[-1]
                    if last["role"] == "user" and isinstance(last["content"], str):
                        messages[-1] = {**last, "content": last["content"] + "\n" + refused}
                    else:
                        messages.append({"role": "user", "content": refused})
                    continue
                outcome = await run_tool(episode, call.function.name, call.function.arguments)
                messages += relay(message.model_dump(exclude_none=True), call, outcome)
        raise AssertionError("no answer in 30 turns")

    return loop


async def responses_agent(episode: Episode, endpoint: ModelEndpoint) -> AgentOutput:
    """The Agents SDK's default API: ``function_call_output`` items, text parts, no flag."""
    client = openai.AsyncOpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key)
    tools = [
        {"type": "function", "name": d["name"], "parameters": d["parameters"]}
        for d in episode.tools.describe()
    ]
    items: list[Any] = [{"role": "user", "content": episode.instruction}]
    async with client:
        for _ in range(30):
            response = await client.responses.create(
                model="m", instructions=SYSTEM, input=items, tools=tools
            )
            calls = [o for o in response.output if o.type == "function_call"]
            if not calls:
                return final(response.output_text)
            call = calls[0]
            value, exc = await run_tool(episode, call.name, call.arguments)
            text = error_text(exc) if exc else json.dumps(value)
            items.append(
                {"type": "function_call", "call_id": call.call_id, "name": call.name,
                 "arguments": call.arguments}
            )  # fmt: skip
            output = [{"type": "input_text", "text": text}]
            items.append(
                {"type": "function_call_output", "call_id": call.call_id, "output": output}
            )
    raise AssertionError("no answer in 30 turns")


async def anthropic_agent(episode: Episode, endpoint: ModelEndpoint) -> AgentOutput:
    """The anthropic SDK with an MCP client: ``tool_result`` blocks, ``is_error`` set."""
    client = anthropic.AsyncAnthropic(
        base_url=endpoint.anthropic_base_url, api_key=endpoint.api_key
    )
    tools = [
        {"name": d["name"], "description": d["description"] or "", "input_schema": d["parameters"]}
        for d in episode.tools.describe()
    ]
    messages: list[Any] = [{"role": "user", "content": episode.instruction}]
    async with client:
        for _ in range(30):
            message = await client.messages.create(
                model="claude-test", max_tokens=1024, system=SYSTEM, messages=messages, tools=tools
            )
            uses = [b for b in message.content if b.type == "tool_use"]
            if not uses:
                return final("".join(b.text for b in message.content if b.type == "text"))
            messages.append({"role": "assistant", "content": [b.model_dump() for b in uses]})
            value, exc = await run_tool(episode, uses[0].name, json.dumps(uses[0].input))
            block = {
                "type": "tool_result",
                "tool_use_id": uses[0].id,
                "content": [
                    {"type": "text", "text": error_text(exc) if exc else json.dumps(value)}
                ],
                "is_error": exc is not None,
            }
            messages.append({"role": "user", "content": [block]})
    raise AssertionError("no answer in 30 turns")


CODE_SYSTEM = (
    "You are an expert assistant who can solve any task using code blobs. The code sequence "
    "must be opened with '<code>', and closed with '</code>'.\nYou only have access to these "
    "tools, behaving like regular python functions:\n<code>\n{tools}\n</code>\n" + SYSTEM
)


def code_listing(episode: Episode) -> str:
    """The tools as smolagents' ``Tool.to_code_prompt`` writes them, and its final_answer."""
    defs = []
    for d in [*episode.tools.describe(), FINAL_ANSWER_TOOL["function"]]:
        props = d["parameters"].get("properties", {})
        params = ", ".join(f"{k}: {v.get('type', 'any')}" for k, v in props.items())
        args = "\n".join(f"        {k}: {v.get('description', k)}" for k, v in props.items())
        doc = f'"""{d.get("description") or d["name"]}\n\n    Args:\n{args}\n    """'
        defs.append(f"def {d['name']}({params}) -> string:\n    {doc}")
    return "\n\n".join(defs)


async def code_agent(episode: Episode, endpoint: ModelEndpoint) -> AgentOutput:
    """smolagents' CodeAgent on the wire: no function tools, the tools listed as Python in the
    system prompt, the model's code run and its printed output relayed as an Observation (an
    MCP error's text printed like any result: mcpadapt ignores ``isError``)."""
    client = openai.AsyncOpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key)
    system = CODE_SYSTEM.replace("{tools}", code_listing(episode))
    messages: list[Any] = [
        {"role": "system", "content": system},
        {"role": "user", "content": f"New task:\n{episode.instruction}"},
    ]
    stop = ["Observation:", "Calling tools:", "</code>"]
    async with client:
        for step in range(1, 31):
            reply = await client.chat.completions.create(model="m", messages=messages, stop=stop)
            text = (reply.choices[0].message.content or "") + "</code>"
            code = text.split("<code>", 1)[1].removesuffix("</code>").strip()
            [statement] = [n for n in ast.parse(code).body if isinstance(n, ast.Expr)]
            call = statement.value
            assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            if call.func.id == "final_answer":
                return final(ast.literal_eval(call.keywords[0].value))
            inner = call.args[0]  # print(tool(...))
            assert isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name)
            args = {k.arg: ast.literal_eval(k.value) for k in inner.keywords}
            value, exc = await run_tool(episode, inner.func.id, json.dumps(args))
            printed = error_text(exc) if exc else json.dumps(value)
            made = [{"id": f"call_{step}", "type": "function",
                     "function": {"name": "python_interpreter", "arguments": code}}]  # fmt: skip
            messages += [
                {"role": "assistant", "content": f"{text}\nCalling tools:\n{made}"},
                {"role": "user", "content": f"Observation:\nExecution logs:\n{printed}\n"
                 "Last output from code snippet:\nNone"},
            ]  # fmt: skip
    raise AssertionError("no answer in 30 turns")


class ShapeAgent:
    clock = "virtual"

    def __init__(self, loop: Callable[[Episode, ModelEndpoint], Awaitable[AgentOutput]]):
        self.loop = loop

    async def run(self, episode: Episode) -> AgentOutput:
        async with trial_endpoint(episode) as endpoint:
            output = await self.loop(episode, endpoint)
        output.usage = episode.usage
        return output


def outcomes(records: list[TrialRecord]) -> dict[str, Any]:
    return {
        r.trial_id: (r.status, [(s.tool, s.args) for s in r.trajectory.tool_steps()])
        for r in records
    }


def run_shape(loop: Callable[[Episode, ModelEndpoint], Awaitable[AgentOutput]]) -> Any:
    return run_agent(ShapeAgent(loop), SCENARIOS, cells=CELLS, trials=2, seed=11)


@pytest.fixture(scope="module")
def example() -> dict[str, Any]:
    records = run_shape(chat_agent(relay_example))
    statuses = {r.status for r in records}
    # The baseline is worth comparing to: a 503 in the clean cell, a timeout that lands.
    assert "passed" in statuses, statuses
    errors = [s.result_class for r in records for s in r.trajectory.tool_steps()]
    assert "http_error" in errors and "timeout" in errors, errors
    return outcomes(records)


SHAPES = {
    "chat-content-parts": chat_agent(relay_text_parts),
    "chat-plain-text": chat_agent(relay_plain_text),
    "chat-error-string-and-object": chat_agent(relay_error_string),
    "react-observation-and-error": chat_agent(relay_react, answer_tool=True),
    "react-unflagged": chat_agent(relay_react_unflagged, answer_tool=True),
    "responses-function-call-output": responses_agent,
    "anthropic-tool-result-is-error": anthropic_agent,
    "code-agent-execution-logs": code_agent,
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_shape_gets_the_examples_outcome(shape: str, example: dict[str, Any]) -> None:
    assert outcomes(run_shape(SHAPES[shape])) == example


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        ('{"order": {"id": "A-1"}}', None),
        ("{'order': {'id': 'A-1'}}", None),  # str(result) of a Python client
        ('{"order": {"id": "A-', None),  # malformed: JSON cut short is a result, if broken
        ("<html><title>502 Bad Gateway</title></html>", None),  # a proxy's page, no error
        ("   ", None),
        ("order A-1 was already refunded", "tool_error"),  # prose where JSON belongs
        ('{"error": "stock unavailable", "kind": "timeout"}', "timeout"),  # the HTTP tools
        ('{"isError": true, "content": [{"type": "text", "text": "timeout: slow"}]}', "timeout"),
        ("Error: ToolException('429 Too Many Requests, retry after 2 s')", "http_error"),
        ("Error: foo is not a valid tool, try one of [bar].", "unknown_tool"),
        ("Invalid JSON input for tool reserve_stock: {", "invalid_arguments"),
        ("connection reset: peer went away", "connection_reset"),
    ],
)
def test_an_outcome_reads_as_a_model_reads_it(content: str, kind: str | None) -> None:
    seen = read_content(content)
    assert (seen.error or {}).get("kind") == kind, seen


def test_a_tool_the_request_does_not_offer_is_never_called() -> None:
    """The plan needs the scenario's tools; a request that offers none of them gets a text
    answer saying so, not a call to a tool that does not exist in that conversation."""

    async def loop(episode: Episode, endpoint: ModelEndpoint) -> AgentOutput:
        client = openai.AsyncOpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key)
        other = {"type": "function", "function": {"name": "weather", "parameters": {}}}
        async with client:
            reply = await client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": episode.instruction}],
                tools=[other],  # type: ignore[list-item]
            )
        message = reply.choices[0].message
        assert message.tool_calls is None and reply.choices[0].finish_reason == "stop"
        return final(message.content)

    records = run_agent(ShapeAgent(loop), [SCENARIOS[1]], trials=2)
    for record in records:
        assert not record.trajectory.tool_steps()
        assert "not among the tools I was given" in (record.answer or ""), record.answer


@pytest.mark.parametrize("content", ["", [], [{"type": "text", "text": ""}]])
def test_an_anthropic_tool_result_flagged_is_error_with_no_text_is_still_an_error(
    content: Any,
) -> None:
    body = {
        "messages": [
            {"role": "user", "content": "renew"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "renew_loan", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                          "is_error": True, "content": content}]},
        ]
    }  # fmt: skip
    seen = observation_for(anthropic_api.to_chat(body)["messages"], "t1")
    assert seen is not None and seen.error is not None, seen


def test_a_call_the_client_refused_is_never_asked_for_again() -> None:
    """Under malformed (seed 7), the plan reads a field the fault renamed and calls with a null
    argument. The example sends it and the tool refuses it; smolagents refuses it itself and
    says so in a turn that names no call. The sim takes that as the call's outcome (it asked
    for the same call until the framework's step limit before): each trial ends as the
    example's, in no more model requests."""
    cells, scenario = ["malformed:probability=0.5"], [SCENARIOS[1]]
    refusing = chat_agent(relay_react_unflagged, answer_tool=True, refuse=null_refused)
    mine = run_agent(ShapeAgent(refusing), scenario, cells=cells, trials=2, seed=7)
    theirs = run_agent(ShapeAgent(chat_agent(relay_example)), scenario, cells=cells, seed=7)
    nulls = [
        r.trial_id
        for r in theirs
        if any(None in s.args.values() for s in r.trajectory.tool_steps())
    ]
    assert nulls, "no call with a null argument: the test shows nothing"
    judged = {r.trial_id: (r.status, r.root_cause) for r in theirs}
    assert {r.trial_id: (r.status, r.root_cause) for r in mine} == judged
    requests = {r.trial_id: len(model_steps(r)) for r in theirs}
    assert {r.trial_id: len(model_steps(r)) for r in mine if r.trial_id in nulls} == {
        t: requests[t] for t in nulls
    }

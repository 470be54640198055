"""A trial's tools as an MCP server, in process (the SDK's memory streams): schemas, results,
and tool-layer faults as isError results that keep the fault's detail."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_support import trial_toolbox

from chaoseval.channels.mcp import ERROR_META, TrialTools, error_text
from chaoseval.errors import ToolConnectionError, ToolHTTPError, ToolTimeout


def in_process(cell: str, calls: list[tuple[str, dict[str, Any]]], mode: str = "legacy") -> Any:
    """Run ``calls`` (args may name a given as ``"$name"``) and return listing, results, state."""

    async def main() -> Any:
        with trial_toolbox(cell) as (toolbox, state, givens):
            async with Client(TrialTools(toolbox).server(), mode=mode) as client:
                listing = await client.list_tools()
                results = []
                for name, args in calls:
                    real = {
                        k: givens[v[1:]] if str(v).startswith("$") else v for k, v in args.items()
                    }
                    results.append(await client.call_tool(name, real))
            return toolbox, listing, results, state

    return anyio.run(main)


LOOKUP = ("lookup_order", {"order_id": "$order_id"})


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_lists_the_scenario_tools_with_their_exact_schemas(mode: str) -> None:
    toolbox, listing, _, _ = in_process("clean", [], mode)
    offered = {t.name: t for t in listing.tools}
    assert list(offered) == list(toolbox.specs)
    for name, spec in toolbox.specs.items():
        assert offered[name].input_schema == spec.params_schema()
        assert offered[name].description == spec.description
    assert offered["issue_refund"].input_schema["required"] == ["order_id", "amount", "clause"]


def test_a_call_runs_through_the_toolbox_and_returns_structured_json() -> None:
    _, _, [result], state = in_process("clean", [LOOKUP])
    assert not result.is_error
    assert result.structured_content["order_id"].startswith("ORD-")
    assert json.loads(result.content[0].text) == result.structured_content
    [step] = state.trajectory.tool_steps()
    assert (step.tool, step.result_class) == ("lookup_order", "ok")


def test_the_world_saying_no_is_an_error_result() -> None:
    _, _, [result], state = in_process("clean", [("lookup_order", {"order_id": "ORD-0"})])
    assert result.is_error
    assert "ORD-0" in result.content[0].text
    assert result.meta[ERROR_META]["kind"] == "tool_error"
    assert state.trajectory.tool_steps()[0].result_class == "tool_error"


def test_arguments_outside_the_schema_are_refused_by_the_trial() -> None:
    _, _, [result], _ = in_process("clean", [("lookup_order", {"order": "x"})])
    assert result.is_error and "invalid arguments for lookup_order" in result.content[0].text


@pytest.mark.parametrize(
    ("cell", "kind", "text"),
    [
        (
            "timeout:probability=1,modes=429,retry_after=2",
            "http_error",
            "429 Too Many Requests, retry after 2 s",
        ),
        ("timeout:probability=1,modes=raise", "timeout", "timeout: lookup_order: upstream timed"),
        ("timeout:probability=1,modes=hang", "timeout", "timeout: lookup_order did not answer"),
        ("timeout:probability=1,modes=reset", "connection_reset", "connection reset: lookup_"),
        # Over stdio and in process there is no transport: the fault stays a tool error.
        ("timeout:probability=1,modes=429,layer=transport", "http_error", "429 Too Many"),
    ],
)
def test_tool_faults_are_error_results_that_keep_the_detail(
    cell: str, kind: str, text: str
) -> None:
    _, _, [result], state = in_process(cell, [LOOKUP])
    assert result.is_error
    assert result.content[0].text.startswith(text)
    assert result.meta[ERROR_META]["kind"] == kind
    [fault] = state.trajectory.faults
    assert fault.delivered


def test_a_malformed_body_arrives_as_raw_text_not_as_an_error() -> None:
    _, _, [result], state = in_process("malformed:probability=1,modes=html_error", [LOOKUP])
    assert not result.is_error
    assert result.structured_content is None
    assert "<html>" in result.content[0].text
    assert state.trajectory.tool_steps()[0].result_class == "malformed"


def test_error_text_of_each_fault() -> None:
    assert error_text(ToolHTTPError(503, "upstream returned 503")) == (
        "503 Service Unavailable (upstream returned 503)"
    )
    assert error_text(ToolHTTPError(429, "Too Many Requests", retry_after=0.5)) == (
        "429 Too Many Requests, retry after 0.5 s"
    )
    assert error_text(ToolTimeout("x: slow")) == "timeout: x: slow"
    assert error_text(ToolConnectionError("x: reset")) == "connection reset: x: reset"

"""tool_schema_drift: tools/list changes under the agent; afterwards only the new names work."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_support import run_over_mcp, trial_toolbox

from chaoseval.bundled.perturbations.tool_schema_drift import variants
from chaoseval.channels.hub import serve_mcp
from chaoseval.channels.mcp import TrialTools

RENAME = "tool_schema_drift:modes=rename,tools=lookup_order"


async def drifted_session(cell: str, over_http: bool, relist: int = 1) -> dict[str, Any]:
    """List the tools ``relist`` times, then call lookup_order with the old and the new names."""
    with trial_toolbox(cell) as (toolbox, state, givens):
        async with _connect(toolbox, over_http) as client:
            listings = [await client.list_tools() for _ in range(relist)]
            tools = {t.name: t for t in listings[-1].tools}
            schema = tools["lookup_order"].input_schema
            old = await client.call_tool("lookup_order", {"order_id": givens["order_id"]})
            [name] = schema["required"]
            new = await client.call_tool("lookup_order", {name: givens["order_id"]})
        return {
            "listings": listings,
            "schema": schema,
            "old": old,
            "new": new,
            "name": name,
            "faults": state.trajectory.faults,
            "steps": state.trajectory.tool_steps(),
            "toolbox": toolbox,
        }


def _connect(toolbox: Any, over_http: bool) -> Any:
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def connect() -> Any:
        if not over_http:
            async with Client(TrialTools(toolbox).server(), mode="legacy") as client:
                yield client
            return
        async with serve_mcp(toolbox) as url, Client(url) as client:
            yield client

    return connect()


@pytest.mark.parametrize("over_http", [False, True])
def test_after_a_rename_only_the_drifted_name_is_accepted(over_http: bool) -> None:
    got = anyio.run(drifted_session, RENAME, over_http)
    assert got["name"] in variants("order_id")
    assert got["name"] in got["schema"]["properties"]
    assert "order_id" not in got["schema"]["properties"]
    assert got["old"].is_error
    assert "order_id: Extra inputs are not permitted" in got["old"].content[0].text
    assert not got["new"].is_error
    assert got["new"].structured_content["order_id"].startswith("ORD-")
    [fault] = got["faults"]
    assert (fault.kind, fault.delivered) == ("schema_drift", True)
    assert fault.detail["tools"]["lookup_order"]["renamed"] == {"order_id": got["name"]}
    refused, served = got["steps"]
    assert refused.result_class == "tool_error" and refused.faults == [0]
    assert served.args == {got["name"]: got["new"].structured_content["order_id"]}
    # The scenario's own schema is untouched: a fresh listing of another trial is clean.
    assert got["toolbox"].specs["lookup_order"].params_schema()["required"] == ["order_id"]


def test_reorder_and_redescribe_change_only_the_listing() -> None:
    cell = "tool_schema_drift:modes=[reorder,redescribe],tools=issue_refund"
    got = anyio.run(drifted_session, cell, True)
    schema = got["listings"][0].tools[2].input_schema
    spec = got["toolbox"].specs["issue_refund"].params_schema()
    change = got["faults"][0].detail["tools"]["issue_refund"]
    if change["mode"] == "reorder":
        assert list(schema["properties"]) != list(spec["properties"])
        assert sorted(schema["properties"]) == sorted(spec["properties"])
    else:
        assert all(p["description"] for p in schema["properties"].values())
    assert set(got["faults"][0].detail["tools"]) == {"issue_refund"}
    assert not got["old"].is_error  # lookup_order did not drift


def test_the_drift_stays_and_is_logged_once() -> None:
    got = anyio.run(drifted_session, RENAME, False, 3)
    schemas = [{t.name: t.input_schema for t in listing.tools} for listing in got["listings"]]
    assert schemas[0] == schemas[1] == schemas[2]
    assert [f.kind for f in got["faults"]] == ["schema_drift"]


def test_after_n_lets_the_first_listing_through() -> None:
    got = anyio.run(drifted_session, RENAME + ",after_n=1", False, 2)
    first, second = ({t.name: t.input_schema for t in x.tools} for x in got["listings"])
    assert "order_id" in first["lookup_order"]["properties"]
    assert "order_id" not in second["lookup_order"]["properties"]


def test_an_agent_that_never_lists_never_meets_the_drift() -> None:
    async def main() -> Any:
        with trial_toolbox(RENAME) as (toolbox, state, givens):
            await toolbox.call("lookup_order", order_id=givens["order_id"])
            return state.trajectory

    trajectory = anyio.run(main)
    assert trajectory.faults == [] and trajectory.tool_steps()[0].result_class == "ok"


def test_the_same_seed_draws_the_same_drift() -> None:
    cell = "tool_schema_drift"
    one = anyio.run(drifted_session, cell, False)["faults"][0].detail
    two = anyio.run(drifted_session, cell, False)["faults"][0].detail
    assert one == two and len(one["tools"]) == 6


def test_an_agent_keyed_on_the_old_names_fails_on_the_drift() -> None:
    """Whole trials: an agent that lists tools but calls the names it was written against is
    refused after a rename, and the judge blames the drift."""
    records = run_over_mcp("tool_schema_drift:modes=rename,tools=lookup_order", 1, True)
    by_cell = {r.cell: r for r in records}
    assert by_cell["clean"].status == "passed"
    [drifted] = [r for r in records if r.cell != "clean"]
    assert drifted.status == "failed" and drifted.root_cause == "stale_tool_schema"
    assert [f.delivered for f in drifted.trajectory.faults] == [True]

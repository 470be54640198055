"""The mcp library's log records go into the trial whose MCP server logged them (its
``mcp.log`` artifact), not onto chaoseval's stderr."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from mcp import Client
from model_support import probe_trial

from chaoseval.channels.hub import ToolHub
from chaoseval.seams.agent import Episode

SCENARIO = "vending-refund-not-dispensed"


async def _misbehave(episode: Episode) -> str:
    """A request the SDK refuses and logs (a DNS-rebinding Host header), then a proper
    session: the refusal is the agent's, and the library's notice of it is the trial's."""
    async with ToolHub.serving() as hub, hub.trial(episode.tools) as urls:  # type: ignore[arg-type]
        async with httpx.AsyncClient() as http:
            refused = await http.post(
                urls.mcp, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={"Host": "evil.example", "Accept": "application/json, text/event-stream"},
            )  # fmt: skip
        async with Client(urls.mcp) as client:
            listed = await client.list_tools()
    return f"{refused.status_code} {len(listed.tools)}"


def test_the_sdk_logs_into_the_trial_not_onto_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    record = probe_trial(_misbehave, journal=tmp_path / "run.jsonl")
    status, tools = record.answer.split()
    assert status == "421" and int(tools) > 0, record.answer
    logs = {a.name: tmp_path / a.path for a in record.artifacts}
    assert "Invalid Host header: evil.example" in logs["mcp.log"].read_text()
    assert "Invalid Host header" not in capfd.readouterr().err

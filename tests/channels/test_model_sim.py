"""chaoseval-sim behind the model channel: real OpenAI SDK agents solve bundled scenarios."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import openai
import pytest
from model_support import SCENARIO, Probe, info, model_steps, run_agent

from chaoseval.agents.openai_agents import OpenAIAgent
from chaoseval.channels.model.session import trial_endpoint
from chaoseval.engine.runner import RunConfig, run
from chaoseval.investigate.replay import to_markdown
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.seams.agent import Episode, load_agent
from chaoseval.store.journal import read_journal


@pytest.mark.parametrize("stream", [False, True])
def test_openai_sdk_agent_solves_a_bundled_scenario(stream: bool) -> None:
    records = run_agent(OpenAIAgent(resilient=False, stream=stream))
    assert [r.status for r in records] == ["passed", "passed"]
    record = records[0]
    steps = model_steps(record)
    tools = record.trajectory.tool_steps()
    assert len(steps) == len(tools) + 1  # one request per tool call, then the answer
    first, last = info(steps[0]), info(steps[-1])
    assert first["attempt"] == 1 and first["stream"] is stream and first["status"] == 200
    assert first["tool_calls"] == [tools[0].tool] and first["messages"] == 2
    assert first["tools"] == len(record.tool_versions)
    assert last["finish_reason"] == "stop" and last["tool_calls"] == []
    assert all(0 < info(s)["upstream_latency"] <= s.latency for s in steps)
    assert len({info(s)["request_hash"] for s in steps}) == len(steps)
    assert record.usage.model_calls == len(steps)
    assert record.usage.input_tokens == sum(info(s)["input_tokens"] for s in steps) > 0


def test_wire_agent_makes_the_simulated_agents_decisions() -> None:
    """Same seed and temperature on the wire: the same slips as the in-process naive agent, so
    success varies with seed and temperature the same way (the model side is the same policy)."""
    scenarios = [s.id for s in installed() if s.ui is None][:6]
    wire = run_agent(OpenAIAgent(resilient=False), scenarios, trials=3, temperature=1.2)
    sim = run_agent(load_agent("naive"), scenarios, trials=3, temperature=1.2)
    outcome = {r.trial_id: r.status for r in sim}
    same = sum(outcome[r.trial_id] == r.status for r in wire)
    assert same >= len(wire) - 1, (same, len(wire))
    assert any(r.status == "failed" for r in wire)  # the hot policy slips
    assert any(r.status == "passed" for r in wire)


def test_models_lists_the_sim_and_unknown_keys_are_refused() -> None:
    async def body(episode: Episode) -> str:
        async with trial_endpoint(episode) as endpoint:
            async with httpx.AsyncClient(base_url=endpoint.base_url) as client:
                denied = await client.get("/models", headers={"Authorization": "Bearer nope"})
                listed = await client.get(
                    "/models", headers={"Authorization": f"Bearer {endpoint.api_key}"}
                )
            sdk = openai.AsyncOpenAI(base_url=endpoint.base_url, api_key="sk-wrong")
            with pytest.raises(openai.AuthenticationError):
                await sdk.chat.completions.create(model="m", messages=[])
            await sdk.close()
        return json.dumps([denied.status_code, [m["id"] for m in listed.json()["data"]]])

    record = run_agent(Probe(body), trials=1)[0]
    assert json.loads(record.answer or "") == [401, ["chaoseval-sim"]]


def test_a_wire_run_journal_reads_back_with_its_model_steps(tmp_path: Path) -> None:
    journal = tmp_path / "wire.jsonl"
    records = run(
        RunConfig(
            scenarios=select(installed(), [SCENARIO]),
            agent=OpenAIAgent(resilient=True, stream=True),
            agent_name="openai-resilient",
            cells=parse_cells(["model_error:modes=429,first_n=1,retry_after=0.01,probability=1"]),
            trials=1,
            journal=journal,
        )
    ).records
    written = read_journal(journal)
    read = {r.trial_id: r for r in written.records}
    sheet = to_markdown(written.records, written)
    assert "model call (chat, attempt 1) → 429 — fault: model_error/http_error (absorbed" in sheet
    assert "model call (chat, attempt 2) → 200: calls lookup_order" in sheet
    for record in records:
        again = read[record.trial_id]
        assert again.trajectory == record.trajectory
        assert [info(s)["attempt"] for s in model_steps(again)][:2] == [
            1,
            1 + (record.cell != "clean"),
        ]

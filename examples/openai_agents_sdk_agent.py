"""A standalone agent on the OpenAI Agents SDK (``openai-agents``): its tools from an MCP
server, its model over the Responses API (the SDK's default). No chaoseval import:

    chaoseval run --agent 'exec:python examples/openai_agents_sdk_agent.py' -s vending-refund-not-dispensed

chaoseval starts it once per trial with the trial's model channel in OPENAI_BASE_URL /
OPENAI_API_KEY and the trial's tools in CHAOSEVAL_MCP_URL; the task comes on stdin. The last
line it prints is its answer as JSON: {"answer": ..., "gave_up": ..., "data": ...}.

Tracing is left as the SDK ships it: on, exporting each run's trace to OpenAI's tracing endpoint
with the key in OPENAI_API_KEY. Under chaoseval that key is the trial's own token and the export
fails (the SDK logs "[non-fatal] Tracing ..." to stderr and goes on). To turn tracing off, set
OPENAI_AGENTS_DISABLE_TRACING=1 in the environment, or call
``agents.set_tracing_disabled(True)`` before the run.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from agents import Agent, OpenAIResponsesModel, Runner
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

INSTRUCTIONS = (
    "You are an operations agent. Use the tools to complete the task. When you are done, reply "
    'with JSON: {"answer": "...", "gave_up": false, "data": {}}.'
)
MAX_TURNS = 40


def final(content: str) -> dict[str, Any]:
    try:
        parsed = json.loads(content)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and "answer" in parsed:
        return parsed
    return {"answer": content}


async def solve(task: str) -> dict[str, Any]:
    name = os.environ.get("CHAOSEVAL_MODEL") or os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    client = AsyncOpenAI(timeout=float(os.environ.get("AGENT_MODEL_TIMEOUT", "10")))
    tools = MCPServerStreamableHttp(
        params={"url": os.environ["CHAOSEVAL_MCP_URL"]}, cache_tools_list=True
    )
    async with tools:
        agent = Agent(
            name="operations",
            instructions=INSTRUCTIONS,
            model=OpenAIResponsesModel(model=name, openai_client=client),
            mcp_servers=[tools],
        )
        result = await Runner.run(agent, task, max_turns=MAX_TURNS)
    return final(str(result.final_output or ""))


def main() -> None:
    task = sys.stdin.read().strip() or os.environ.get("CHAOSEVAL_INSTRUCTION", "")
    print(json.dumps(asyncio.run(solve(task))))


if __name__ == "__main__":
    main()

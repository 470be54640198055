"""A standalone agent on Pydantic AI (``pydantic-ai-slim[openai,mcp]``): an ``Agent`` whose
tools come from an MCP server as a toolset (``MCPToolset``), its model named the way the docs
name it (``openai:<model>``, which Pydantic AI sends over the Responses API). No chaoseval
import:

    chaoseval run --agent 'exec:python examples/pydantic_ai_agent.py' -s vending-refund-not-dispensed

chaoseval starts it once per trial with the trial's model channel in OPENAI_BASE_URL /
OPENAI_API_KEY (Pydantic AI's OpenAI provider reads both) and the trial's tools in
CHAOSEVAL_MCP_URL; the task comes on stdin. The last line it prints is its answer as JSON:
{"answer": ..., "gave_up": ..., "data": ...}.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset

INSTRUCTIONS = (
    "You are an operations agent. Use the tools to complete the task. When you are done, reply "
    'with JSON: {"answer": "...", "gave_up": false, "data": {}}.'
)


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
    agent = Agent(
        f"openai:{name}",
        instructions=INSTRUCTIONS,
        toolsets=[MCPToolset(os.environ["CHAOSEVAL_MCP_URL"])],
    )
    async with agent:
        result = await agent.run(task)
    return final(result.output)


def main() -> None:
    task = sys.stdin.read().strip() or os.environ.get("CHAOSEVAL_INSTRUCTION", "")
    print(json.dumps(asyncio.run(solve(task))))


if __name__ == "__main__":
    main()

"""A standalone tool-using agent on the Anthropic SDK (``anthropic``) with an MCP client
(``mcp``) for its tools: the tool-use loop of Anthropic's docs and MCP's client quickstart.
No chaoseval import:

    chaoseval run --agent 'exec:python examples/anthropic_mcp_agent.py' -s vending-refund-not-dispensed

chaoseval starts it once per trial with the trial's model channel in ANTHROPIC_BASE_URL /
ANTHROPIC_API_KEY (the SDK reads both itself) and the trial's tools in CHAOSEVAL_MCP_URL; the
task comes on stdin. The last line it prints is its answer as JSON:
{"answer": ..., "gave_up": ..., "data": ...}.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import anthropic
from mcp import Client

SYSTEM = (
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
    model = os.environ.get("CHAOSEVAL_MODEL") or os.environ.get(
        "ANTHROPIC_MODEL", "claude-sonnet-4-6"
    )
    claude = anthropic.AsyncAnthropic(timeout=float(os.environ.get("AGENT_MODEL_TIMEOUT", "10")))
    async with claude, Client(os.environ["CHAOSEVAL_MCP_URL"]) as mcp:
        tools = [
            {"name": t.name, "description": t.description or "", "input_schema": t.input_schema}
            for t in (await mcp.list_tools()).tools
        ]
        messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
        for _ in range(MAX_TURNS):
            response = await claude.messages.create(
                model=model, max_tokens=1024, system=SYSTEM, messages=messages, tools=tools
            )
            messages.append({"role": "assistant", "content": response.content})
            if response.stop_reason != "tool_use":
                return final("".join(b.text for b in response.content if b.type == "text"))
            results = []
            for block in response.content:
                if block.type != "tool_use":
                    continue
                result = await mcp.call_tool(block.name, block.input)
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": block.id,
                        "content": "".join(getattr(p, "text", "") for p in result.content),
                        "is_error": result.is_error,
                    }
                )
            messages.append({"role": "user", "content": results})
        return {"answer": f"no answer after {MAX_TURNS} turns", "gave_up": True}


def main() -> None:
    task = sys.stdin.read().strip() or os.environ.get("CHAOSEVAL_INSTRUCTION", "")
    print(json.dumps(asyncio.run(solve(task))))


if __name__ == "__main__":
    main()

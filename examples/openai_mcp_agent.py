"""A standalone tool-using agent: the OpenAI SDK for its model, an MCP client for its tools.

It imports nothing from chaoseval. It is the kind of agent chaoseval tests as it ships:

    chaoseval run --agent 'exec:python examples/openai_mcp_agent.py' -s vending-refund-not-dispensed

chaoseval starts it once per trial with the trial's model channel in OPENAI_BASE_URL /
OPENAI_API_KEY and the trial's tools in CHAOSEVAL_MCP_URL; the task comes on stdin. The last
line it prints is its answer as JSON: {"answer": ..., "gave_up": ..., "data": ...}.

Outside chaoseval, point the same variables at a real model and any MCP server.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import openai
from mcp import Client

SYSTEM = (
    "You are an operations agent. Use the tools to complete the task. When you are done, reply "
    'with JSON: {"answer": "...", "gave_up": false, "data": {}}.'
)
MAX_TURNS = 40


def openai_tools(listing: Any) -> list[dict[str, Any]]:
    """MCP tool definitions as OpenAI function tools (the schemas as the server gives them)."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description or "",
                "parameters": tool.input_schema,
            },
        }
        for tool in listing.tools
    ]


def tool_content(result: Any) -> str:
    """An MCP result as the tool message's content; an error keeps the server's details."""
    text = "".join(getattr(part, "text", "") for part in result.content)
    if not result.is_error:
        return text
    details = next(iter((result.meta or {}).values()), {})
    error = {"message": text, **(details if isinstance(details, dict) else {})}
    return json.dumps({"error": error})


def final(content: str) -> dict[str, Any]:
    try:
        parsed = json.loads(content)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and "answer" in parsed:
        return parsed
    return {"answer": content}


async def solve(task: str) -> dict[str, Any]:
    model = os.environ.get("CHAOSEVAL_MODEL") or os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    llm = openai.AsyncOpenAI(timeout=float(os.environ.get("AGENT_MODEL_TIMEOUT", "10")))
    async with llm, Client(os.environ["CHAOSEVAL_MCP_URL"]) as tools:
        offered = openai_tools(await tools.list_tools())
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": task},
        ]
        for _ in range(MAX_TURNS):
            response = await llm.chat.completions.create(
                model=model,
                messages=messages,
                tools=offered,  # type: ignore[arg-type]
            )
            message = response.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return final(message.content or "")
            for call in message.tool_calls:
                arguments = json.loads(call.function.arguments or "{}")
                result = await tools.call_tool(call.function.name, arguments)
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": tool_content(result)}
                )
        return {"answer": f"no answer after {MAX_TURNS} turns", "gave_up": True}


def main() -> None:
    task = sys.stdin.read().strip() or os.environ.get("CHAOSEVAL_INSTRUCTION", "")
    print(json.dumps(asyncio.run(solve(task))))


if __name__ == "__main__":
    main()

"""A standalone agent on Pydantic AI (``pydantic-ai-slim[openai,mcp]``): an ``Agent`` whose
tools come from an MCP server as a toolset (``MCPToolset``), its model named the way the docs
name it (``openai:<model>``, which Pydantic AI sends over the Responses API). No chaoseval
import:

    chaoseval run --agent 'exec:python examples/pydantic_ai_agent.py' -s vending-refund-not-dispensed

chaoseval starts it once per trial with the trial's model channel in OPENAI_BASE_URL /
OPENAI_API_KEY (Pydantic AI's OpenAI provider reads both) and the trial's tools in
CHAOSEVAL_MCP_URL; the task comes on stdin. The last line it prints is its answer as JSON:
{"answer": ..., "gave_up": ..., "data": ...}.

With CHAOSEVAL_USER=lines in its environment it talks with a conversational scenario's user
over chaoseval's line protocol (docs/AGENTS.md, "Conversing"):

    chaoseval run --agent 'exec:CHAOSEVAL_USER=lines python examples/pydantic_ai_agent.py' \
      -s conv-vending-refund

Its first stdin line is then {"instruction": ..., "user": ...}; whatever the model says that is
not its JSON answer goes to the user as a {"to_user": ...} line, and the user's reply, the next
stdin line {"from_user": ..., "ended": ...}, is the next run's user prompt (with the history).
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
TALKING = (
    " You are talking with a user: any reply of yours that is not that JSON is sent to them, "
    "and their answer comes back as the next message."
)
LINES = os.environ.get("CHAOSEVAL_USER", "").strip().lower() == "lines"
MAX_TURNS = 20  # messages to the user in one task


def answer_of(content: str) -> dict[str, Any] | None:
    try:
        parsed = json.loads(content)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and "answer" in parsed:
        return parsed
    return None


def final(content: str) -> dict[str, Any]:
    return answer_of(content) or {"answer": content}


async def to_user(text: str) -> str | None:
    """One message to the user on stdout; their reply from stdin (None: stdin closed). When
    they have left, the protocol's line itself is passed on, so the model knows."""
    print(json.dumps({"to_user": text}), flush=True)
    line = await asyncio.to_thread(sys.stdin.readline)
    if not line:
        return None
    turn = json.loads(line)
    if turn.get("ended") or not isinstance(turn.get("from_user"), str):
        return line.strip()
    return str(turn["from_user"])


async def solve(task: str, user: bool = False) -> dict[str, Any]:
    name = os.environ.get("CHAOSEVAL_MODEL") or os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    agent = Agent(
        f"openai:{name}",
        instructions=INSTRUCTIONS + (TALKING if user else ""),
        toolsets=[MCPToolset(os.environ["CHAOSEVAL_MCP_URL"])],
    )
    async with agent:
        result = await agent.run(task)
        for _ in range(MAX_TURNS if user else 0):
            if answer_of(result.output) is not None:
                break
            reply = await to_user(result.output)
            if reply is None:
                break
            result = await agent.run(reply, message_history=result.all_messages())
    return final(result.output)


def main() -> None:
    if LINES:  # the first line is {"instruction": ..., "user": ...}; stdin stays open
        first = json.loads(sys.stdin.readline() or "{}")
        task = first.get("instruction") or os.environ.get("CHAOSEVAL_INSTRUCTION", "")
        print(json.dumps(asyncio.run(solve(task, user=bool(first.get("user"))))))
        return
    task = sys.stdin.read().strip() or os.environ.get("CHAOSEVAL_INSTRUCTION", "")
    print(json.dumps(asyncio.run(solve(task))))


if __name__ == "__main__":
    main()

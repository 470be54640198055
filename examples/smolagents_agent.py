"""A standalone agent on smolagents: a ``ToolCallingAgent`` (JSON tool calls, not code) on an
OpenAI-compatible model (``OpenAIModel``), its tools from an MCP server (``MCPClient``, over
streamable HTTP). No chaoseval import:

    chaoseval run --agent 'exec:python examples/smolagents_agent.py' -s vending-refund-not-dispensed

chaoseval starts it once per trial with the trial's model channel in OPENAI_BASE_URL /
OPENAI_API_KEY and the trial's tools in CHAOSEVAL_MCP_URL; the task comes on stdin. smolagents
logs its steps to stdout; the last line it prints is its answer as JSON:
{"answer": ..., "gave_up": ..., "data": ...}.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from smolagents import MCPClient, OpenAIModel, ToolCallingAgent

INSTRUCTIONS = (
    "You are an operations agent. Use the tools to complete the task. When you are done, give "
    'your final answer as JSON: {"answer": "...", "gave_up": false, "data": {}}.'
)


def final(output: Any) -> dict[str, Any]:
    if isinstance(output, dict) and "answer" in output:
        return output
    try:
        parsed = json.loads(str(output))
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and "answer" in parsed:
        return parsed
    return {"answer": str(output)}


def solve(task: str) -> dict[str, Any]:
    model = OpenAIModel(
        model_id=os.environ.get("CHAOSEVAL_MODEL") or os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
        api_base=os.environ.get("OPENAI_BASE_URL"),
        api_key=os.environ.get("OPENAI_API_KEY"),
    )
    server = {"url": os.environ["CHAOSEVAL_MCP_URL"], "transport": "streamable-http"}
    with MCPClient(server, structured_output=False) as tools:
        agent = ToolCallingAgent(tools=tools, model=model, instructions=INSTRUCTIONS)
        return final(agent.run(task))


def main() -> None:
    task = sys.stdin.read().strip() or os.environ.get("CHAOSEVAL_INSTRUCTION", "")
    print(json.dumps(solve(task)))


if __name__ == "__main__":
    main()

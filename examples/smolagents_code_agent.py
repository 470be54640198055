"""A standalone agent on smolagents' ``CodeAgent``: its model writes Python that calls the tools
(listed to it as Python functions in the system prompt) and smolagents runs that code; the
model on an OpenAI-compatible endpoint (``OpenAIModel``), the tools from an MCP server
(``MCPClient``, over streamable HTTP). No chaoseval import:

    chaoseval run --agent 'exec:python examples/smolagents_code_agent.py' -s vending-refund-not-dispensed

chaoseval starts it once per trial with the trial's model channel in OPENAI_BASE_URL /
OPENAI_API_KEY and the trial's tools in CHAOSEVAL_MCP_URL; the task comes on stdin. smolagents
logs its steps to stdout; the last line it prints is its answer, ``{"answer": ...}`` holding
what the model passed to ``final_answer`` (asked for as chaoseval's answer JSON, which
chaoseval reads inside it: ``gave_up`` and ``data`` included).
"""

from __future__ import annotations

import json
import os
import sys

from smolagents import CodeAgent, MCPClient, OpenAIModel

INSTRUCTIONS = (
    "You are an operations agent. Use the tools to complete the task. When you are done, call "
    'final_answer with your answer as JSON text: {"answer": "...", "gave_up": false, "data": {}}.'
)


def solve(task: str) -> str:
    model = OpenAIModel(
        model_id=os.environ.get("CHAOSEVAL_MODEL") or os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
        api_base=os.environ.get("OPENAI_BASE_URL"),
        api_key=os.environ.get("OPENAI_API_KEY"),
    )
    server = {"url": os.environ["CHAOSEVAL_MCP_URL"], "transport": "streamable-http"}
    with MCPClient(server, structured_output=False) as tools:
        agent = CodeAgent(tools=tools, model=model, instructions=INSTRUCTIONS)
        return str(agent.run(task))


def main() -> None:
    task = sys.stdin.read().strip() or os.environ.get("CHAOSEVAL_INSTRUCTION", "")
    print(json.dumps({"answer": solve(task)}))


if __name__ == "__main__":
    main()

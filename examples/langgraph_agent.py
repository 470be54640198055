"""A standalone agent on LangGraph: a ``StateGraph`` of a model node (``ChatOpenAI`` from
``langchain-openai`` with the tools bound) and a ``ToolNode``, its tools loaded from an MCP
server by ``langchain-mcp-adapters``, as in that package's LangGraph example. No chaoseval
import:

    chaoseval run --agent 'exec:python examples/langgraph_agent.py' -s vending-refund-not-dispensed

chaoseval starts it once per trial with the trial's model channel in OPENAI_BASE_URL /
OPENAI_API_KEY (``ChatOpenAI`` reads both) and the trial's tools in CHAOSEVAL_MCP_URL; the task
comes on stdin. The last line it prints is its answer as JSON:
{"answer": ..., "gave_up": ..., "data": ...}.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from langchain_core.messages import SystemMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

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
    name = os.environ.get("CHAOSEVAL_MODEL") or os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    client = MultiServerMCPClient(
        {"tools": {"url": os.environ["CHAOSEVAL_MCP_URL"], "transport": "streamable_http"}}
    )
    tools = await client.get_tools()
    model = ChatOpenAI(model=name, timeout=float(os.environ.get("AGENT_MODEL_TIMEOUT", "10")))
    model_with_tools = model.bind_tools(tools)

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model_with_tools.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node(call_model)
    builder.add_node(ToolNode(tools))
    builder.add_edge(START, "call_model")
    builder.add_conditional_edges("call_model", tools_condition)
    builder.add_edge("tools", "call_model")
    graph = builder.compile()

    state = await graph.ainvoke(
        {"messages": [SystemMessage(SYSTEM), ("user", task)]},
        {"recursion_limit": 2 * MAX_TURNS + 1},  # a model step and a tool step per turn
    )
    return final(state["messages"][-1].text)


def main() -> None:
    task = sys.stdin.read().strip() or os.environ.get("CHAOSEVAL_INSTRUCTION", "")
    print(json.dumps(asyncio.run(solve(task))))


if __name__ == "__main__":
    main()

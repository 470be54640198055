"""Channels on the wire: what an unmodified agent talks to (its model, its MCP and HTTP tools).

Each channel serves one trial's traffic on 127.0.0.1 with a well-kept ASGI stack (Starlette on
uvicorn, run inside the trial's event loop) and injects that trial's faults where the agent's own
client code meets them. The trial's ToolBox and judge stay the single source of truth.
"""

"""How a tool's outcome travels back to the model as the content of a tool message.

A result is its JSON; an error is ``{"error": {"kind", "message", "status"?, "retry_after"?}}``
so a model reads what went wrong the way an LLM reads an error text (``chaoseval-sim`` reads
this and every other client's shape: chaoseval.channels.model.observations).
Agents that refuse a call themselves (arguments that are not JSON, a tool that was never
offered) say so with the kinds below: the model may then issue the call again.
"""

from __future__ import annotations

import json
from typing import Any

from chaoseval.errors import (
    AgentVisibleError,
    ToolConnectionError,
    ToolError,
    ToolHTTPError,
    ToolTimeout,
)

REJECTED = ("invalid_arguments", "unknown_tool")


def result_content(result: Any) -> str:
    return json.dumps(result, default=str)


def error_content(exc: BaseException, kind: str | None = None) -> str:
    error: dict[str, Any] = {
        "kind": kind or getattr(exc, "kind", "error"),
        "message": str(exc),
    }
    if isinstance(exc, ToolHTTPError):
        error["status"] = exc.status
        if exc.retry_after is not None:
            error["retry_after"] = exc.retry_after
    return json.dumps({"error": error})


def as_exception(error: dict[str, Any]) -> AgentVisibleError:
    """Rebuild the agent-visible error an envelope describes (for the simulated policy)."""
    kind, message = str(error.get("kind", "error")), str(error.get("message", ""))
    if kind == "timeout":
        return ToolTimeout(message)
    if kind == "http_error":
        return ToolHTTPError(int(error.get("status", 500)), message, error.get("retry_after"))
    if kind == "connection_reset":
        return ToolConnectionError(message)
    return ToolError(message)

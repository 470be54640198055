"""``ask_user``: a conversational scenario's user as a tool of the trial's MCP and HTTP servers.

Listed only when the trial has a user (``Scenario.user``) and the scenario has no tool of that
name, after the listing plugins rewrote the scenario's tools: a drifted schema or a poisoned
description never reaches it. A call goes to ``episode.user.say`` (chaoseval.users.channel), so
the user-channel plugins apply and the turn is a ``user`` step; it never passes the ToolBox,
so the scenario's policy, the step budget and the tool-channel plugins never see it (no delay,
timeout or malformed body, no tool step).

Its one argument is ``message`` (a string of at most :data:`MESSAGE_LIMIT` characters); its
result is always the JSON object ``{"reply": <the user's words, or null>, "ended": <bool>}``:
``ended`` is true once the user has left (their goodbye may come as the last ``reply``; after
it every ``reply`` is null). A bad argument is a tool error (``isError`` over MCP, 422 over
HTTP) and no turn.
"""

from __future__ import annotations

import time
from typing import Any

from chaoseval import redact
from chaoseval.errors import ToolError
from chaoseval.model.scenario import ToolDescription
from chaoseval.seams.agent import UserChannel

ASK_USER = "ask_user"
MESSAGE_LIMIT = 16_000  # characters of one message to the user
DESCRIPTION = (
    "Send a message to the user you are helping (the customer in the conversation) and wait "
    'for their reply. Returns {"reply": "<what they said>", "ended": false}; once they have '
    'left the conversation, "ended" is true and "reply" is null (their goodbye may come as '
    "the last reply)."
)
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "What you say to the user."},
    },
    "required": ["message"],
    "additionalProperties": False,
}
RETURNS: dict[str, Any] = {
    "type": "object",
    "properties": {"reply": {"type": ["string", "null"]}, "ended": {"type": "boolean"}},
    "required": ["reply", "ended"],
}


def offered(specs: Any, user: UserChannel | None) -> bool:
    """Whether the trial lists ``ask_user``: it has a user, and no tool of its own so named."""
    return user is not None and ASK_USER not in specs


def mcp_tool() -> dict[str, Any]:
    """``ask_user`` as an MCP tool definition (``tools/list``)."""
    return {"name": ASK_USER, "description": DESCRIPTION, "inputSchema": PARAMETERS}


def described() -> ToolDescription:
    """``ask_user`` as ``GET /tools`` describes a tool."""
    return {
        "name": ASK_USER,
        "description": DESCRIPTION,
        "parameters": PARAMETERS,
        "returns": RETURNS,
    }


def message_of(arguments: Any) -> str:
    """The message in a call's arguments; a ToolError that says how to call it otherwise."""
    message = arguments.get("message") if isinstance(arguments, dict) else None
    extra = sorted(set(arguments) - {"message"}) if isinstance(arguments, dict) else []
    if not isinstance(message, str) or extra:
        raise ToolError(f'{ASK_USER} takes one argument, {{"message": "<text>"}}, a string')
    if len(message) > MESSAGE_LIMIT:
        raise ToolError(
            f"{ASK_USER}: the message has {len(message)} characters, over the limit of "
            f"{MESSAGE_LIMIT}: say it in shorter messages"
        )
    # A lone surrogate (JSON's "\ud800") is no character: '?' in its place, as a record takes.
    return message.encode("utf-8", "replace").decode("utf-8")


async def say(user: UserChannel, message: str) -> tuple[str | None, bool]:
    """One turn: the message (secrets redacted: the user never needs one) through the user
    channel; the reply, and whether the user has left."""
    reply = await user.say(redact.redact(message))
    return reply, reply is None or user.ended


async def ask(user: UserChannel, arguments: Any, toolbox: Any = None) -> dict[str, Any]:
    """A call of ``ask_user``: its result object, or a ToolError for bad arguments. The time the
    user took is added to ``toolbox.busy_seconds`` (a wire channel's overhead leaves it out)."""
    message = message_of(arguments)
    started = time.perf_counter()
    try:
        reply, ended = await say(user, message)
    finally:
        if toolbox is not None:
            toolbox.busy_seconds += time.perf_counter() - started
    return {"reply": reply, "ended": ended}

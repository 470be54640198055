"""``chaoseval-sim`` in a conversation: the policy's ``episode.user`` over the wire.

The simulated policy talks to a scenario's user (``actor.ask_for``, ``confirm``, ``say``), but
the model behind a wire agent never reaches the user itself: the agent does. So each message
the policy says becomes the model's turn, and the user's reply is read back from the
conversation the agent sends next:

- when the request offers the ``ask_user`` tool (chaoseval.engine.askuser: the trial's MCP and
  HTTP tools list it), the turn is a call of it, ``{"message": ...}``, and the reply is that
  call's result, ``{"reply": ..., "ended": ...}``, found as any tool result is
  (chaoseval.channels.model.observations);
- else the turn is plain assistant text (what a line-protocol agent relays as a ``to_user``
  line, chaoseval.agents.userlines), and the reply is the user message(s) the agent added
  after it: their text, or, when the agent relays the protocol's line itself,
  ``{"from_user": ..., "ended": ...}`` read as such.

Replies are read in order, one per message, so the policy's user calls are answered as the
in-process user answers them; nothing is drawn here, so the conversation is the trial seed's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from chaoseval.channels.model.observations import Observation, observation_for, parse_value
from chaoseval.channels.model.wire import content_text
from chaoseval.engine.askuser import ASK_USER
from chaoseval.seams.agent import UserChannel

Reply = tuple[str | None, bool]  # what the user said (None: nothing), whether they have left


@dataclass
class UserAction:
    """A message of the policy to the user, as the model's turn."""

    call_id: str
    text: str
    tool: bool = False  # said through the request's ask_user tool (else as plain text)
    users_before: int = 0  # user messages the request that got the turn held


class WireUser:
    """What the policy has as ``episode.user`` behind chaoseval-sim: each ``say`` is a turn
    of the model's conversation with the agent (``ask``), the reply what the agent relayed."""

    def __init__(self, user: UserChannel, ask: Callable[[str], Awaitable[Reply]]):
        self.opening = user.opening  # the end of the instruction the agent sent
        facts: Any = getattr(user, "facts", {})  # names, kinds and labels, never values
        self.facts: Mapping[str, Any] = facts
        self._ask = ask
        self.ended = False

    async def say(self, text: str) -> str | None:
        reply, ended = await self._ask(text)
        self.ended = self.ended or ended
        return reply


def offers_ask_user(offered: Mapping[str, Any], specs: Mapping[str, Any]) -> bool:
    """Whether a request's tools include the harness's ``ask_user`` (not a scenario's own)."""
    return ASK_USER in offered and ASK_USER not in specs


def user_messages(messages: list[Any]) -> list[dict[str, Any]]:
    return [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]


def reply_for(messages: list[Any], action: UserAction) -> Reply | None:
    """The user's reply to ``action`` as the conversation carries it (None: not relayed yet)."""
    if action.tool:
        seen = observation_for(messages, action.call_id)
        return None if seen is None else _from_result(seen)
    return _from_text(messages, action)


def _from_result(seen: Observation) -> Reply:
    """An ask_user result: ``{"reply", "ended"}``, else its text as the reply. An error (the
    agent's client refused the call) reached no user: no reply."""
    if seen.error is not None:
        return None, False
    value = seen.value
    if isinstance(value, dict) and ("reply" in value or "ended" in value):
        reply = value.get("reply")
        return (reply if isinstance(reply, str) else None), value.get("ended") is True
    return (None if value is None else str(value)), False


def _from_text(messages: list[Any], action: UserAction) -> Reply | None:
    """The user message(s) after the assistant turn that said ``action.text`` (the latest such
    turn), else after the request's first ``users_before`` user messages."""
    dicts = [m for m in messages if isinstance(m, dict)]
    said = action.text.strip()
    at = next(
        (
            i
            for i in range(len(dicts) - 1, -1, -1)
            if dicts[i].get("role") == "assistant"
            and said
            and said in content_text(dicts[i].get("content"))
        ),
        None,
    )
    after = user_messages(dicts[at + 1 :]) if at is not None else None
    if after is None:
        after = user_messages(dicts)[action.users_before :]
    if not after:
        return None
    return _relayed("\n".join(content_text(m.get("content")) for m in after))


def _relayed(text: str) -> Reply:
    """A relayed reply: the protocol's line itself (``{"from_user", "ended"}``), else text."""
    value = parse_value(text) if text.lstrip().startswith("{") else None
    if isinstance(value, dict) and "from_user" in value:
        reply = value.get("from_user")
        return (reply if isinstance(reply, str) else None), value.get("ended") is True
    return text, False

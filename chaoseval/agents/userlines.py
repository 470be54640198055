"""The user on an ``exec:`` agent's stdin and stdout: the opt-in line protocol.

An agent whose environment has ``CHAOSEVAL_USER=lines`` (``--agent 'exec:CHAOSEVAL_USER=lines
python agent.py'``, or set where chaoseval runs) talks with a conversational scenario's user
over its standard streams, one JSON object a line:

- stdin's first line is ``{"instruction": "<the task>", "user": <whether the scenario has a
  user>}`` (the instruction may span lines: here it is one JSON string); stdin stays open.
- a stdout line ``{"to_user": "<message>"}`` is a message to the user (one turn: the user
  channel's plugins apply, it is a ``user`` step); its reply comes as the next stdin line,
  ``{"from_user": "<reply>", "ended": false}``, or ``{"from_user": null, "ended": true}`` once
  the user has left (their goodbye may come as the last ``from_user`` with ``ended`` true). A
  message that cannot be sent (not a string, over ``askuser.MESSAGE_LIMIT`` characters, no user
  in the scenario) is answered with ``"from_user": null`` and an ``"error"`` saying why.
- the answer is the last stdout line as always: ``{"answer": ...}``.

Every other stdout line is left as it is (kept in ``stdout.txt``; a to_user line too). A line
over :data:`LINE_LIMIT` bytes is no message. The stdout drain hands lines over without
waiting: at most :data:`PENDING` messages wait for their replies, and past them a message is
left unanswered (noted in the trial), so an agent that stops reading its stdin, or exits
mid-conversation, fails by its own doing and never holds the trial up.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from anyio.abc import ByteSendStream

from chaoseval.engine import askuser
from chaoseval.errors import AgentVisibleError
from chaoseval.model import untrusted
from chaoseval.seams.agent import TrialLink, UserChannel

VARIABLE = "CHAOSEVAL_USER"  # the agent's environment variable that opts in
LINES = "lines"
LINE_LIMIT = 64 << 10  # bytes of one stdout line read as a message to the user
PENDING = 16  # messages waiting for their reply; more are left unanswered
SAY_GRACE = 30.0  # the longest turn; shielded, so an agent gone mid-turn leaves a whole step
NOTE_TOOL = "user_lines"  # the note step's ``tool``: messages the agent sent and never read


def wanted(env: dict[str, str]) -> bool:
    """Whether the agent's environment asks for the line protocol."""
    return env.get(VARIABLE, "").strip().lower() == LINES


class UserLines:
    """One trial's line protocol: :meth:`feed` takes stdout as it comes, :meth:`serve` writes
    the first line and then each reply on stdin."""

    def __init__(self, user: UserChannel | None, link: TrialLink | None = None):
        self._user = user
        self._link = link
        self._send, self._receive = anyio.create_memory_object_stream[Any](PENDING)
        self._line = bytearray()
        self._over = False  # the line being written passed LINE_LIMIT
        self.unanswered = 0  # messages past PENDING

    def feed(self, chunk: bytes) -> None:
        """A chunk of stdout (from its drain): complete lines read, never waiting."""
        while chunk:
            end = chunk.find(b"\n")
            part, chunk = (chunk, b"") if end < 0 else (chunk[:end], chunk[end + 1 :])
            if not self._over:
                self._line += part
                self._over = len(self._line) > LINE_LIMIT
                if self._over:
                    self._line = bytearray()
            if end >= 0:
                if not self._over:
                    self._take(bytes(self._line))
                self._line, self._over = bytearray(), False

    def _take(self, raw: bytes) -> None:
        if b'"to_user"' not in raw:  # (an escaped key is no message: plain output)
            return
        try:
            obj = untrusted.loads(raw)
        except ValueError:
            return
        if not isinstance(obj, dict) or "to_user" not in obj:
            return
        try:
            self._send.send_nowait(obj["to_user"])
        except anyio.WouldBlock:
            self.unanswered += 1

    async def serve(self, stdin: ByteSendStream, instruction: str) -> None:
        """The first line, then a reply for each message, until the agent's stdin breaks."""
        first = {"instruction": instruction, "user": self._user is not None}
        if not await _write(stdin, first):
            return
        async for message in self._receive:
            reply: dict[str, Any] = {"from_user": None, "ended": True, "error": "no reply in time"}
            with anyio.move_on_after(SAY_GRACE, shield=True):  # a turn is recorded whole
                reply = await self._turn(message)
            if not await _write(stdin, reply):
                return

    async def _turn(self, message: Any) -> dict[str, Any]:
        if self._user is None:
            return {"from_user": None, "ended": True, "error": "this scenario has no user"}
        try:
            text = askuser.message_of({"message": message})
        except AgentVisibleError as exc:
            return {"from_user": None, "ended": self._user.ended, "error": str(exc)}
        reply, ended = await askuser.say(self._user, text)
        return {"from_user": reply, "ended": ended}

    def close(self) -> None:
        """The agent is gone: messages it left unanswered are noted in its trial."""
        self._send.close()
        link = self._link
        if self.unanswered and link is not None:
            link.state.trajectory.add_step(
                "note", t=link.world.clock.monotonic(), tool=NOTE_TOOL,
                args={"unanswered": self.unanswered},
                error=f"the agent sent {self.unanswered} message(s) to the user while "
                f"{PENDING} were waiting for their replies (it did not read its stdin): "
                "those were not sent",
            )  # fmt: skip


async def _write(stdin: ByteSendStream, obj: dict[str, Any]) -> bool:
    """One line on the agent's stdin; False once it is closed (the agent exited)."""
    try:
        await stdin.send(json.dumps(obj, ensure_ascii=False).encode("utf-8", "replace") + b"\n")
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        return False
    return True

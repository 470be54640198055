"""What happened in a conversation, read from a trajectory's ``user`` steps: the dialogue
checks' vocabulary, shared by the YAML expressions (``asked(order_id) before
called(issue_refund)``) and Python checks (scenarios/conversations.py).

Each event function returns the trajectory step indices where it happened, in order, so
"happened" is a non-empty list and "A before B" compares first indices. A ``user`` step's
``data`` is the simulated user's reading of the agent's message (``UserTurnData``): the facts
it asked for, stated right or wrong, whether it asked to confirm and the user agreed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaoseval.model.trajectory import Step, Trajectory, UserTurnData

EVENTS = ("asked", "stated", "misstated", "confirmed", "said", "called", "agreed", "ended")
# Events that name one of the user's facts (checked against ``user.facts`` when a file loads).
ON_FACTS = ("asked", "stated", "misstated", "confirmed")


def user_turns(trajectory: Trajectory) -> list[Step]:
    return [s for s in trajectory.steps if s.kind == "user"]


def _data(step: Step) -> UserTurnData | None:
    return step.data if isinstance(step.data, UserTurnData) else None


def asked(trajectory: Trajectory, fact: str) -> list[int]:
    """The turns whose message asked the user for ``fact``."""
    return [s.index for s in user_turns(trajectory) if (d := _data(s)) and fact in d.asked]


def stated(trajectory: Trajectory, fact: str) -> list[int]:
    """The turns whose message stated ``fact`` rightly."""
    return [s.index for s in user_turns(trajectory) if (d := _data(s)) and fact in d.stated]


def misstated(trajectory: Trajectory, fact: str) -> list[int]:
    """The turns whose message stated another value of ``fact``'s kind than the user's."""
    return [s.index for s in user_turns(trajectory) if (d := _data(s)) and fact in d.misstated]


def confirmed(trajectory: Trajectory, fact: str = "") -> list[int]:
    """The turns where the user agreed to a proposal stating ``fact`` rightly (any proposal
    when ``fact`` is empty)."""
    return [
        s.index
        for s in user_turns(trajectory)
        if (d := _data(s)) and d.agreed and (not fact or fact in d.stated)
    ]


def agreed(trajectory: Trajectory) -> list[int]:
    return confirmed(trajectory)


def ended(trajectory: Trajectory) -> list[int]:
    """The turn the user left on (an empty list: they stayed to the end)."""
    return [s.index for s in user_turns(trajectory) if (d := _data(s)) and d.ended]


def called(trajectory: Trajectory, tool: str) -> list[int]:
    """The successful calls of ``tool``."""
    return [s.index for s in trajectory.tool_calls(tool) if s.result_class == "ok"]


def said(trajectory: Trajectory, output: Any, text: str) -> list[int]:
    """Where the agent said ``text`` (case-insensitive) to the user: its messages, and its
    final answer (counted after the last step)."""
    want = text.casefold()
    found = [
        s.index
        for s in user_turns(trajectory)
        if want in str((s.args or {}).get("text", "")).casefold()
    ]
    answer = getattr(output, "answer", None) or ""
    if want in answer.casefold():
        found.append(len(trajectory.steps))
    return found


def turns(trajectory: Trajectory) -> int:
    """How many messages the agent sent the user."""
    return len(user_turns(trajectory))


def before(first: list[int], then: list[int]) -> bool:
    """``first`` happened before ``then`` did; true when ``then`` never happened (a check of
    what came first says nothing of whether the second thing was done)."""
    return not then or (bool(first) and min(first) < min(then))


def event(name: str, arg: str, trajectory: Trajectory, output: Any) -> list[int]:
    """One of :data:`EVENTS` by name (``said``'s argument is the text, ``called``'s a tool)."""
    if name == "said":
        return said(trajectory, output, arg)
    if name == "called":
        return called(trajectory, arg)
    if name in ("agreed", "ended"):
        return agreed(trajectory) if name == "agreed" else ended(trajectory)
    return {"asked": asked, "stated": stated, "misstated": misstated, "confirmed": confirmed}[name](
        trajectory, arg
    )


# Check functions for Python scenarios, ``Check(name, fn, kind="process")``: the same
# questions the YAML terms ask, with a detail that says what was found.
CheckFn = Callable[[Any, Any, Trajectory], tuple[bool, str]]


def happened_before(first: str, arg: str, then: str, then_arg: str) -> CheckFn:
    """``first(arg) before then(then_arg)`` as a check, e.g.
    ``happened_before("confirmed", "amount", "called", "issue_refund")``."""

    def check(world: Any, output: Any, trajectory: Trajectory) -> tuple[bool, str]:
        a = event(first, arg, trajectory, output)
        b = event(then, then_arg, trajectory, output)
        ok = before(a, b)
        return ok, f"{first}({arg}) at steps {a}, {then}({then_arg}) at steps {b}"

    return check


def confirmed_before(tool: str, fact: str) -> CheckFn:
    """The user agreed to a proposal stating ``fact`` before the agent's first successful
    ``tool`` call (true when it never made one: whether it should have is another check)."""
    return happened_before("confirmed", fact, "called", tool)


def asked_before(tool: str, fact: str) -> CheckFn:
    """The agent asked the user for ``fact`` before its first successful ``tool`` call."""
    return happened_before("asked", fact, "called", tool)


def never_said(text: str) -> CheckFn:
    """The agent never said ``text`` to the user nor in its answer (a promise it must not
    make)."""

    def check(world: Any, output: Any, trajectory: Trajectory) -> tuple[bool, str]:
        found = said(trajectory, output, text)
        return not found, f"said {text!r} at steps {found}" if found else f"never said {text!r}"

    return check


def at_most_turns(limit: int) -> CheckFn:
    """The agent sent the user at most ``limit`` messages."""

    def check(world: Any, output: Any, trajectory: Trajectory) -> tuple[bool, str]:
        n = turns(trajectory)
        return n <= limit, f"{n} turns (at most {limit})"

    return check

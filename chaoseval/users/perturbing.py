"""What the user-channel plugins (perturbations/user_*.py) share: the channel, whom they apply
to, and how their blame reads a failed conversation.

A user plugin changes what the simulated user says: it sets the turn's ``Style`` before the
user answers (``UserCall.style``) or rewrites the reply after, and logs each change with
``ctx.fault("user", kind, ...)``; the channel marks the turn's faults delivered when the reply
reaches the agent. Nothing here raises into the agent: a plugin's own bug is a PluginError
(the build_chain wrapper), so a harness error never reads as the agent's failure.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from chaoseval.model.conversation import FactKind, RenderedUser
from chaoseval.model.trajectory import Fault, Step
from chaoseval.seams.perturbation import CommonParams, FailureContext, Perturbation
from chaoseval.users import reading

P = TypeVar("P", bound=CommonParams)


class UserPerturbation(Perturbation[P]):
    """A plugin on the ``user`` channel: only conversational scenarios have it."""

    channel = "user"

    @classmethod
    def applies_to(cls, scenario: Any) -> bool:
        return getattr(scenario, "user", None) is not None

    @classmethod
    def missing(cls, scenario: Any) -> str | None:
        if getattr(scenario, "user", None) is None:
            return "the scenario has no user to talk to: give it 'user:' (docs/CONVERSATIONS.md)"
        return None


def user_of(failure: FailureContext) -> RenderedUser | None:
    """The trial's user with its world's values (None: no conversational scenario)."""
    spec = getattr(failure.scenario, "user", None)
    givens = getattr(failure.world, "givens", None)
    if spec is None or givens is None:
        return None
    return spec.render(givens)


def used_after(fault: Fault, failure: FailureContext, kind: FactKind, value: str) -> bool:
    """Whether ``value`` (a value of ``kind``, read the ways people write it) is in a tool call
    the agent made after the fault's turn, or in its answer: what it acted on."""
    after = failure.tool_steps_after(fault)
    text = json.dumps([s.args for s in after], default=str) + " " + failure.answer_text()
    if kind == "text":
        return value.casefold() in text.casefold()
    return reading.canonical(kind, value) in reading.values(kind, text, strict=False)


def turns_after(fault: Fault, failure: FailureContext) -> list[Step]:
    """The user turns from the fault's own on."""
    return [s for s in failure.trajectory.steps[(fault.step or 0) :] if s.kind == "user"]


def wrote_unagreed(failure: FailureContext) -> Step | None:
    """The first write the agent made while the last proposal before it went unagreed (a reply
    it took for a yes that was not one), or None."""
    scenario = failure.scenario
    writers = {t.name for t in getattr(scenario, "tools", ()) if getattr(t, "writes", ())}
    last: Step | None = None
    for step in failure.trajectory.steps:
        if step.kind == "user" and step.data is not None and getattr(step.data, "confirm", False):
            last = step
        elif step.kind == "tool" and step.tool in writers:
            agreed = last is not None and bool(getattr(last.data, "agreed", False))
            return None if agreed else step
    return None

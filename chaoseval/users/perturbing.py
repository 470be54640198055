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
from chaoseval.seams.perturbation import (
    CallNext,
    CommonParams,
    FailureContext,
    Perturbation,
    PerturbationContext,
)
from chaoseval.users import reading

P = TypeVar("P", bound=CommonParams)


class UserPerturbation(Perturbation[P]):
    """A plugin on the ``user`` channel: only conversational scenarios have it."""

    channel = "user"
    # The trial's scenario and world, kept from the first turn: the judge's ``blame`` shows a
    # plugin the trajectory and the output only (a plugin instance lives for one trial).
    scenario: Any = None
    world: Any = None

    async def __call__(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        self.scenario, self.world = ctx.definition, ctx.world
        return await super().__call__(call, call_next, ctx)

    def user(self, failure: FailureContext) -> RenderedUser | None:
        """The trial's user with its world's values (None: no conversational scenario)."""
        spec = getattr(failure.scenario or self.scenario, "user", None)
        givens = getattr(failure.world or self.world, "givens", None)
        if spec is None or givens is None:
            return None
        return spec.render(givens)

    def wrote_unagreed(self, failure: FailureContext) -> Step | None:
        """The first write the agent made while the last proposal before it went unagreed (a
        reply it took for a yes that was not one), or None."""
        scenario = failure.scenario or self.scenario
        writers = {t.name for t in getattr(scenario, "tools", ()) if getattr(t, "writes", ())}
        last: Step | None = None
        for step in failure.trajectory.steps:
            if step.kind == "user" and getattr(step.data, "confirm", False):
                last = step
            elif step.kind == "tool" and step.tool in writers:
                agreed = last is not None and bool(getattr(last.data, "agreed", False))
                return None if agreed else step
        return None

    @classmethod
    def applies_to(cls, scenario: Any) -> bool:
        return getattr(scenario, "user", None) is not None

    @classmethod
    def missing(cls, scenario: Any) -> str | None:
        if getattr(scenario, "user", None) is None:
            return "the scenario has no user to talk to: give it 'user:' (docs/CONVERSATIONS.md)"
        return None


def used_after(fault: Fault, failure: FailureContext, kind: FactKind, value: str) -> bool:
    """Whether ``value`` (a value of ``kind``, read the ways people write it) is in the answer,
    or in a tool call the agent made after the user's next turn (when the user could set it
    right; after the fault's own turn when there was none): what it went on acting on."""
    steps = failure.trajectory.steps
    at = fault.step or 0
    later = [s.index for s in steps[at + 1 :] if s.kind == "user"]
    start = later[0] if later else at
    calls = [s.args for s in steps[start + 1 :] if s.kind == "tool"]
    text = json.dumps(calls, default=str) + " " + failure.answer_text()
    if kind == "text":
        return value.casefold() in text.casefold()
    return reading.canonical(kind, value) in reading.values(kind, text, strict=False)


def turns_after(fault: Fault, failure: FailureContext) -> list[Step]:
    """The user turns from the fault's own on."""
    return [s for s in failure.trajectory.steps[(fault.step or 0) :] if s.kind == "user"]

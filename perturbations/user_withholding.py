"""User withholding: the customer answers only what is asked directly.

Nothing is volunteered (``Style.withhold``): no fact the user would offer unasked, no line of
its script ("I'm moving to another provider."), and a message that asks for no fact by name
gets "What do you need to know?". A reluctant user's patience runs out (``patience``): after that
many messages in a row it had nothing to answer to, the next one gets a goodbye and the user
leaves. An agent that opens with small talk and open questions instead of asking for what
it needs loses them (``did_not_ask_directly``).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from chaoseval.model.records import RootCause
from chaoseval.model.trajectory import Fault
from chaoseval.seams.perturbation import (
    CallNext,
    CommonParams,
    FailureContext,
    PerturbationContext,
    perturbation,
)
from chaoseval.users.channel import UserCall
from chaoseval.users.perturbing import UserPerturbation, turns_after


class UserWithholdingParams(CommonParams):
    patience: int | None = Field(
        default=1, ge=0,
        description="messages in a row with nothing to answer the user bears before leaving at "
        "the next one (None: never leaves)",
    )  # fmt: skip


NEVER_ASKED = RootCause(
    name="did_not_ask_directly",
    label="did not ask the user directly for what it needed",
    owner="user_withholding",
)


@perturbation("user_withholding")
class UserWithholding(UserPerturbation[UserWithholdingParams]):
    """The user volunteers nothing and answers only direct questions."""

    Params = UserWithholdingParams
    models = "a reluctant customer: answers only what is asked, leaves an agent that chats"
    root_causes = (NEVER_ASKED,)

    async def apply(self, call: UserCall, call_next: CallNext, ctx: PerturbationContext) -> Any:
        user, style = call.user, call.style
        style.withhold, style.patience = True, self.params.patience
        kept = [
            f.name
            for f in user.facts
            if f.volunteer and f.name not in user.given and f.name not in call.reading.asked
        ] if user.turns == 0 else []  # fmt: skip
        scripted = user.turns + 1 in user.user.script
        idle = user.idle
        reply = await call_next(call)
        if reply is None:
            return reply
        if kept or scripted:
            ctx.fault("user", "withheld", facts=kept, script=scripted)
        if user.left and call.ended:
            ctx.fault("user", "left_unanswered", after=idle)
        elif user.idle > idle:
            ctx.fault("user", "withheld", facts=[], script=False)  # asked nothing it answers
        return reply

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        """The user left unanswered, or said 'what do you need' and was never asked."""
        turns = turns_after(fault, failure)
        if any(getattr(s.data, "ended", False) for s in turns):
            return NEVER_ASKED
        asked = {n for s in turns for n in getattr(s.data, "asked", [])}
        withheld = set(fault.detail.get("facts") or [])
        return NEVER_ASKED if withheld and not withheld & asked else None

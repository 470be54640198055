"""User impatience: the customer answers a few messages, then says goodbye and leaves.

Until then each reply ends with a word of hurry ("Please be quick, I don't have much time.").
After ``turns`` of the agent's messages the user answers the next one with a goodbye in its
own words and language and leaves: every later message gets no reply (``episode.user.say``
returns None). An agent that spends the user's turns on small talk, or takes the goodbye for
a yes, does not finish (``user_left``).
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
from chaoseval.users import phrases
from chaoseval.users.channel import UserCall
from chaoseval.users.perturbing import UserPerturbation


class UserImpatienceParams(CommonParams):
    turns: int = Field(default=2, ge=0, description="messages the user answers before leaving")


USER_LEFT = RootCause(
    name="user_left", label="lost the user before the task was done", owner="user_impatience"
)


@perturbation("user_impatience")
class UserImpatience(UserPerturbation[UserImpatienceParams]):
    """The user leaves, with a goodbye, after ``turns`` messages."""

    Params = UserImpatienceParams
    models = "a customer with no time: leaves after a few messages"
    root_causes = (USER_LEFT,)

    async def apply(self, call: UserCall, call_next: CallNext, ctx: PerturbationContext) -> Any:
        user, style = call.user, call.style
        if user.left:
            return await call_next(call)
        table = phrases.table(style.language)
        if call.index < self.params.turns:
            reply = await call_next(call)
            if reply is None or call.ended:
                return reply
            ctx.fault("user", "hurry", left=self.params.turns - call.index)
            return f"{reply} {self._pick(table.hurry, style.paraphrase)}"
        user.left = call.ended = True  # from now on the user answers nothing
        ctx.fault("user", "left", after=self.params.turns)
        return self._pick(table.bye, style.paraphrase)

    @staticmethod
    def _pick(frames: tuple[str, ...], rng: Any) -> str:
        return frames[0] if rng is None else str(rng.choice(frames))

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        """It failed after the user left: it wrote on the goodbye, or could not finish."""
        if fault.kind != "left":
            return None
        if self.wrote_unagreed(failure) is not None or failure.output is None:
            return USER_LEFT
        return USER_LEFT if failure.output.gave_up or not failure.tool_steps_after(fault) else None

"""User typos: noise in the customer's text, and now and then a value they mistype.

Each reply gets typos in some of its words (``rate``, at least one where a word can take it):
a swap, a doubled or a dropped letter, never in a value, an id or a yes or no. With chance
``mistype``, decided once per trial, the first fact value the user states is written with a
slip of the fingers (ORD-1042 as ORD-1024 or ORD-142) while the user still knows the truth
(``told`` is untouched): an agent that reads the value back, or says it found nothing under it
and asks again, is corrected (the slip is made once). An agent that acts on the slip looks
up or writes the wrong thing (``acted_on_mistyped_value``).
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
from chaoseval.users.perturbing import UserPerturbation, used_after
from chaoseval.users.writing import mistype, noise


class UserTyposParams(CommonParams):
    rate: float = Field(default=0.2, ge=0, le=1, description="share of words given a typo")
    mistype: float = Field(
        default=0.5, ge=0, le=1,
        description="chance, once per trial, that the user mistypes the first value they state",
    )  # fmt: skip


MISTYPED = RootCause(
    name="acted_on_mistyped_value",
    label="acted on a value the user mistyped",
    owner="user_typos",
)


@perturbation("user_typos")
class UserTypos(UserPerturbation[UserTyposParams]):
    """Typos in the user's text; a fact value mistyped once while the user knows the truth."""

    Params = UserTyposParams
    models = "a customer typing in a hurry: typos, a digit swapped or dropped in an order number"
    root_causes = (MISTYPED,)

    def __init__(self, params: UserTyposParams | None = None, *, label: str | None = None):
        super().__init__(params, label=label)
        self._hit: bool | None = None  # whether this trial's user mistypes a value
        self._made = False  # mistyped once: the user types it right from then on

    async def apply(self, call: UserCall, call_next: CallNext, ctx: PerturbationContext) -> Any:
        user = call.user
        if self._hit is None:  # drawn once, on the first turn's stream
            self._hit = ctx.rng.random() < self.params.mistype
        planned: dict[str, str] = {}
        if self._hit and not self._made:
            # The first fact this reply states: one asked for, or one volunteered at first.
            offered = [f.name for f in user.facts if f.volunteer] if user.turns == 0 else []
            first = [*call.reading.asked, *offered]
            name = next((n for n in first if n not in call.reading.misstated), None)
            slip = None if name is None else mistype(
                user.user.fact(name).kind, user.told[name], ctx.rng
            )  # fmt: skip
            if name is not None and slip is not None:
                planned[name] = slip
        call.style.values.update(planned)
        reply = await call_next(call)
        for name, slip in planned.items():
            if name in call.style.said and call.style.values.get(name) == slip:
                self._made = True
                kind = user.user.fact(name).kind
                ctx.fault("user", "mistyped_value", fact=name, value_kind=kind, written=slip)
            call.style.values.pop(name, None)  # a later plugin's style is its own business
        if reply is None:
            return reply
        noisy, changed = noise(reply, ctx.rng, self.params.rate)
        if changed:
            ctx.fault("user", "typos", words=changed)
        return noisy

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        """Acted on the slip: it is in a later tool call or the answer."""
        if fault.kind != "mistyped_value":
            return None
        written, kind = str(fault.detail.get("written", "")), fault.detail.get("value_kind", "text")
        return MISTYPED if written and used_after(fault, failure, kind, written) else None

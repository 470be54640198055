"""User paraphrase: the customer says it in other words, and writes values the ways people do.

Each reply draws its frames from the phrase tables' other frames (``Style.paraphrase``, the
turn's seeded stream), and each id or amount the user states is written, with chance
``rewrite``, another way people write it that a careful reader still reads ("ord-1042",
"ORD 1042", "ord #1042", "$2.75"; chaoseval.users.writing.forms). An agent that reads values
only as the scenario writes them misses them (``misread_user``).
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
from chaoseval.users.writing import forms


class UserParaphraseParams(CommonParams):
    rewrite: float = Field(
        default=0.8, ge=0, le=1,
        description="chance that a value the user states is written another way people write it",
    )  # fmt: skip


MISREAD = RootCause(
    name="misread_user",
    label="did not read what the user wrote in their own words",
    owner="user_paraphrase",
)


@perturbation("user_paraphrase")
class UserParaphrase(UserPerturbation[UserParaphraseParams]):
    """Other phrasings of the user's replies; values written as people write them."""

    Params = UserParaphraseParams
    models = "a customer in their own words: 'ord-1042', 'ORD 1042', '$2.75', other phrasings"
    root_causes = (MISREAD,)

    async def apply(self, call: UserCall, call_next: CallNext, ctx: PerturbationContext) -> Any:
        user, style = call.user, call.style
        style.paraphrase = ctx.rng
        planned: dict[str, str] = {}
        for fact in user.facts:
            ways = forms(fact.kind, user.told[fact.name])
            if ways and ctx.rng.random() < self.params.rewrite and fact.name not in style.values:
                planned[fact.name] = ctx.rng.choice(ways)
        style.values.update(planned)
        reply = await call_next(call)
        written = {n: planned[n] for n in dict.fromkeys(style.said) if n in planned}
        for name in planned:
            style.values.pop(name, None)
        if reply is not None and (written or style.varied):
            ctx.fault("user", "paraphrase", frames=style.varied, values=written)
        return reply

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        """A value it wrote another way never reached a later tool call or the answer."""
        user = self.user(failure)
        written = fault.detail.get("values") or {}
        if user is None:
            return None
        for name in written:
            kind = user.fact(name).kind
            if not used_after(fault, failure, kind, user.values[name]):
                return MISREAD
        return None

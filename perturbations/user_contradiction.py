"""User contradiction: the customer states a fact wrong, then takes it back.

The first time the user states facts, it states them wrong: another value of each one's kind
the user could believe is theirs (another order number of the same shape, an amount 20-60 %
off, a day or two out; none the world holds, so it is no other customer's record), and the
user believes it (``told``, the simulator's hook): read back, it is agreed to. On its next
reply the user takes it back, unasked ("Sorry, I gave you the wrong order number: it's
ORD-1042."; or "Wait, that's not right..."), whatever the agent said; from then on it says the
true value. An agent that keeps the first value it heard acts on the retracted one
(``acted_on_retracted_value``); free-text facts are never contradicted.
"""

from __future__ import annotations

from typing import Any

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
from chaoseval.users.writing import plausible

RETRACTED = RootCause(
    name="acted_on_retracted_value",
    label="acted on a fact the user took back",
    owner="user_contradiction",
)


def world_values(world: Any) -> list[str]:
    """Every scalar the world's tables hold, as text: the values a wrong one must not be."""
    tables = getattr(world, "tables", None) or {}
    return [str(v) for rows in tables.values() for row in rows for v in row.values()
            if isinstance(v, str | int | float) and not isinstance(v, bool)]  # fmt: skip


@perturbation("user_contradiction")
class UserContradiction(UserPerturbation[CommonParams]):
    """The user states facts wrong the first time, and corrects them on its next reply."""

    Params = CommonParams
    models = "a customer who gives the wrong order number, then corrects it"
    root_causes = (RETRACTED,)

    def __init__(self, params: CommonParams | None = None, *, label: str | None = None):
        super().__init__(params, label=label)
        self._done = False  # contradicted once: the trial has its contradiction
        self._pending: dict[str, str] = {}  # fact -> its true value, to take back next reply

    async def __call__(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        self.scenario, self.world = ctx.definition, ctx.world
        if self._pending:  # the correction is owed whatever the triggers say of this turn
            return await self._take_back(call, call_next)
        if self._done:
            return await call_next(call)
        return await super().__call__(call, call_next, ctx)

    async def apply(self, call: UserCall, call_next: CallNext, ctx: PerturbationContext) -> Any:
        user = call.user
        taken = world_values(ctx.world)
        wrong: dict[str, str] = {}
        for fact in user.facts:
            if fact.name in user.given or fact.name in call.style.values:
                continue
            guess = plausible(fact.kind, user.told[fact.name], ctx.rng, taken)
            if guess is not None:
                wrong[fact.name] = guess
        call.style.values.update(wrong)
        reply = await call_next(call)
        for name in dict.fromkeys(call.style.said):
            if name in wrong and call.style.values.get(name) == wrong[name]:
                self._pending[name] = user.told[name]
                user.told[name] = wrong[name]  # the user believes it, until it takes it back
                kind = user.user.fact(name).kind
                ctx.fault("user", "contradiction", fact=name, value_kind=kind, said=wrong[name])
        self._done = bool(self._pending)
        for name in wrong:
            call.style.values.pop(name, None)
        return reply

    async def _take_back(self, call: UserCall, call_next: CallNext) -> Any:
        user = call.user
        for name, true in self._pending.items():
            user.told[name] = true
        call.style.recant.extend(self._pending)
        self._pending = {}
        return await call_next(call)

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        """The retracted value is in a later tool call or the answer."""
        said, kind = str(fault.detail.get("said", "")), fault.detail.get("value_kind", "text")
        return RETRACTED if said and used_after(fault, failure, kind, said) else None

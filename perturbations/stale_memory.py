"""Stale memory: facts from earlier sessions that are no longer true.

Runs once per trial on the memory channel. For each remembered fact it can corrupt, it either
replaces the value with an outdated one (``outdated``: the old address, the superseded policy,
the order as it was before it was cancelled) or adds a contradicting copy from another session
ahead of the true one (``contradict``: two sessions disagree and retrieval surfaces the wrong
one first).

Where the stale value comes from, in order:
1. the scenario's own history: ``givens["stale_memory"][key]``, a list of values the fact had
   in earlier sessions (realistic: previous addresses, older policy versions);
2. otherwise a generic rewrite by type: a status word flipped to its opposite
   (cancelled -> active, ...), a number moved by 30-60 %; facts of other shapes are left alone.

A structured fact (a mapping, such as the order as it was read) is made stale in one of the
fields its memory item declares in ``stale_fields`` (its history under ``"KEY.FIELD"``), and
the fault records which field.
A trial whose memory has nothing it can make stale logs no fault, so the cell can show that
the perturbation did not land.
"""

from __future__ import annotations

import fnmatch
import json
from datetime import timedelta
from typing import Any, Literal

from pydantic import Field

from chaoseval.model.records import RootCause
from chaoseval.model.scenario import MemoryItem
from chaoseval.model.trajectory import Fault
from chaoseval.seams.perturbation import (
    CallNext,
    CommonParams,
    FailureContext,
    Perturbation,
    PerturbationContext,
    perturbation,
)

OPPOSITES = {
    "cancelled": "active",
    "canceled": "active",
    "active": "cancelled",
    "refunded": "pending",
    "pending": "shipped",
    "shipped": "processing",
    "delivered": "in transit",
    "closed": "open",
    "open": "closed",
}


def generic_stale(value: Any, rng: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        factor = rng.choice([-1, 1]) * rng.uniform(0.3, 0.6)
        new = value * (1 + factor)
        return round(new) if isinstance(value, int) else round(new, 2)
    if isinstance(value, str) and value.lower() in OPPOSITES:
        return OPPOSITES[value.lower()]
    return None


def _falsify(
    item: MemoryItem, history: dict[str, Any], rng: Any
) -> tuple[Any, Any, str | None] | None:
    """The stale value, the wrong part of it and, of a structured value, the field it is in;
    None when nothing can be made stale. A scalar is replaced whole (from the scenario's
    history of it, else by type); a mapping has one of its declared ``stale_fields``
    falsified the same way (its history: ``givens["stale_memory"]["KEY.FIELD"]``)."""
    fields = [f for f in item.stale_fields if isinstance(item.value, dict) and f in item.value]
    if not fields:
        known = [v for v in history.get(item.key, []) if v != item.value]
        stale = rng.choice(known) if known else generic_stale(item.value, rng)
        return None if stale is None or stale == item.value else (stale, stale, None)
    field = rng.choice(fields)
    true = item.value[field]
    known = [v for v in history.get(f"{item.key}.{field}", []) if v != true]
    stale = rng.choice(known) if known else generic_stale(true, rng)
    if stale is None or stale == true:
        return None
    return {**item.value, field: stale}, stale, field


class StaleMemoryParams(CommonParams):
    mode: Literal["outdated", "contradict", "any"] = Field(
        default="outdated",
        description="outdated: replace the fact; contradict: add a conflicting older copy first",
    )
    keys: list[str] = Field(
        default_factory=lambda: ["*"], description="memory keys (globs) to make stale"
    )
    age_days: float = Field(default=60, ge=0, description="how old the stale fact claims to be")


STALE_MEMORY_TRUSTED = RootCause(
    name="stale_memory_trusted", label="acted on a stale remembered fact", owner="stale_memory"
)


@perturbation("stale_memory")
class StaleMemory(Perturbation[StaleMemoryParams]):
    """Replace or contradict remembered facts with outdated ones from earlier sessions."""

    channel = "memory"
    Params = StaleMemoryParams
    models = "an agent memory holding outdated facts: old address, old policy, old status"
    root_causes = (STALE_MEMORY_TRUSTED,)

    async def apply(
        self, call: list[MemoryItem], call_next: CallNext, ctx: PerturbationContext
    ) -> Any:
        memory: list[MemoryItem] = list(await call_next(call))
        history = (getattr(ctx.world, "givens", None) or {}).get("stale_memory") or {}
        out: list[MemoryItem] = []
        for item in memory:
            if not any(fnmatch.fnmatchcase(item.key, g) for g in self.params.keys):
                out.append(item)
                continue
            falsified = _falsify(item, history, ctx.rng)
            if falsified is None:
                out.append(item)
                continue
            value, stale, where = falsified
            mode = self.params.mode
            if mode == "any":
                mode = ctx.rng.choice(["outdated", "contradict"])
            when = item.recorded_at or ctx.clock.now()
            old = item.model_copy(
                update={
                    "value": value,
                    "session": f"session-{ctx.rng.randint(100, 999)}",
                    "recorded_at": when - timedelta(days=self.params.age_days),
                }
            )
            # Of a structured value, which field is wrong too.
            at = {} if where is None else {"field": where}
            ctx.fault("memory", "stale_memory", key=item.key, **at, mode=mode, stale=stale)
            out.extend([old] if mode == "outdated" else [old, item])
        return out

    @classmethod
    def missing(cls, scenario: Any) -> str | None:
        memory = list(getattr(scenario, "memory", None) or [])
        if not memory:
            return "the scenario remembers nothing: give it 'memory:' items"
        history = (getattr(scenario, "givens", None) or {}).get("stale_memory") or {}
        lacks = []
        for item in memory:
            if isinstance(item.value, dict) and not item.stale_fields:
                lacks.append(
                    f"memory {item.key!r} is a mapping with no stale_fields: declare the fields "
                    f"a stale copy may have wrong (stale_fields: [{', '.join(item.value)}])"
                )
            elif not isinstance(item.value, dict | int | float | bool | str) or (
                isinstance(item.value, str)
                and item.value.lower() not in OPPOSITES
                and "{" not in item.value
                and not history.get(item.key)
            ):
                lacks.append(
                    f"memory {item.key!r} holds {item.value!r:.40} with no earlier value: "
                    f"list what it used to be in givens.stale_memory[{item.key!r}]"
                )
        return "; ".join(lacks) or None

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        """Trusted only when the stale value shows up in a later tool argument or the answer."""
        stale = str(fault.detail.get("stale", ""))
        after = failure.tool_steps_after(fault)
        used = json.dumps([s.args for s in after], default=str) + failure.answer_text()
        return STALE_MEMORY_TRUSTED if stale and stale in used else None

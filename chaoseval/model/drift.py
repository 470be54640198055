"""Drift points: where and how the world moves between an agent's read and its write.

A scenario declares them (YAML ``drift:``, or ``Scenario(drift=[DriftPoint(...)])``); the
``drift`` perturbation plugin (perturbations/drift.py) carries them out. Each names one row
(``row``: column -> value, values may be ``{given}`` templates), one ``field`` of it, a rule
for its new value and a trigger:

- rule, exactly one of: ``set`` (a fixed value: stock 0, status ``cancelled``), ``add`` (a
  number, or ``[lo, hi]`` drawn per trial: a price that rises), ``one_of`` (a value drawn per
  trial from a list: the owner who took the slot);
- trigger, at most one of: ``after_reads`` (after the agent's n-th read of the row; the
  default, 1) or ``after_seconds`` (once the trial's clock passes it), each a number or a
  ``[lo, hi]`` range drawn per trial;
- ``conflict``: how the service shows the change to a write made on the old data: ``silent``
  (the write goes through on stale data, as most CRUD services do) or ``409`` (the write is
  refused with a 409 Conflict naming what changed, as a service with optimistic concurrency
  does).

Draws come from the plugin's own seeded stream, so a trial replays exactly.
"""

from __future__ import annotations

import random
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Conflict = Literal["silent", 409]
RULES = ("set", "add", "one_of")
_PLACEHOLDER = re.compile(r"^\{([A-Za-z_][A-Za-z0-9_]*)\}$")


def _span(value: Any, name: str) -> None:
    if isinstance(value, list) and (len(value) != 2 or value[0] > value[1]):
        raise ValueError(f"{name} is a number or a range [lo, hi] with lo <= hi, got {value!r}")


class DriftPoint(BaseModel):
    """One place where the world changes under the agent (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    name: str = ""  # default "<table>.<field>"
    table: str
    row: dict[str, Any] = Field(min_length=1)  # column -> value ("{given}" templates)
    field: str
    set: Any = None
    add: float | list[float] | None = None
    one_of: list[Any] | None = None
    after_reads: int | list[int] | None = Field(default=None)
    after_seconds: float | list[float] | None = None
    conflict: Conflict = "silent"

    @model_validator(mode="after")
    def _one_rule_one_trigger(self) -> DriftPoint:
        rules = [r for r in RULES if r in self.model_fields_set]
        if len(rules) != 1:
            raise ValueError(
                f"a drift point has exactly one rule ({', '.join(RULES)}), found "
                f"{', '.join(rules) or 'none'}: e.g. 'set: 0' or 'add: [2, 5]'"
            )
        if self.after_reads is not None and self.after_seconds is not None:
            raise ValueError("a drift point has one trigger: after_reads or after_seconds")
        if self.one_of is not None and not self.one_of:
            raise ValueError("one_of needs at least one value")
        _span(self.add, "add")
        _span(self.after_reads, "after_reads")
        _span(self.after_seconds, "after_seconds")
        for name in ("after_reads", "after_seconds"):
            value = getattr(self, name)
            low = value[0] if isinstance(value, list) else value
            if low is not None and low < (1 if name == "after_reads" else 0):
                raise ValueError(f"{name} must be at least {1 if name == 'after_reads' else 0}")
        if not self.name:
            self.name = f"{self.table}.{self.field}"
        return self

    @property
    def rule(self) -> str:
        return next(r for r in RULES if r in self.model_fields_set)

    def where(self, givens: dict[str, Any]) -> dict[str, Any]:
        """The row's columns and values, ``{given}`` placeholders filled (keeping their type)."""
        out = {}
        for column, value in self.row.items():
            if isinstance(value, str):
                whole = _PLACEHOLDER.match(value)
                value = givens[whole.group(1)] if whole else value.format_map(givens)
            out[column] = value
        return out

    def trigger(self, rng: random.Random) -> tuple[str, float]:
        """``("reads", n)`` or ``("seconds", t)``, ranges drawn from ``rng``."""
        if self.after_seconds is not None:
            s = self.after_seconds
            return "seconds", rng.uniform(s[0], s[1]) if isinstance(s, list) else float(s)
        r = 1 if self.after_reads is None else self.after_reads
        return "reads", rng.randint(r[0], r[1]) if isinstance(r, list) else r

    def new_value(self, old: Any, rng: random.Random) -> Any:
        """What the field becomes, given what it was."""
        if self.rule == "set":
            return self.set
        if self.rule == "one_of":
            assert self.one_of is not None
            choices = [v for v in self.one_of if v != old] or self.one_of
            return rng.choice(choices)
        add = self.add
        delta = rng.uniform(add[0], add[1]) if isinstance(add, list) else float(add or 0)
        base = old if isinstance(old, int | float) and not isinstance(old, bool) else 0
        if isinstance(base, int) and (float(delta).is_integer() or isinstance(add, list)):
            return base + round(delta)
        return round(base + delta, 2)

"""Clock skew (freezegun): the trial's "now" is somewhere the agent may not expect.

Runs once per trial on the clock channel and moves the world's calendar time; tools of
``freeze_time`` scenarios run under freezegun at that time, so ``datetime.now()`` inside them
agrees. Presets move to the awkward instants real systems trip over, relative to the
scenario's own start time:

- ``month_end``: the last day of the start month (tomorrow is another month);
- ``leap_day``: 29 February of the next leap year;
- ``dst``: the day the clocks change (last Sunday of March, EU rules) of the start year, when
  local-time arithmetic crosses the switch;
- ``timezone``: the server clock in another zone: shifted by a whole-hour offset between -11
  and +13 hours (drawn per trial), which often lands on another date;
- ``any``: one of the above, drawn per trial.

``to=2026-12-31T23:50`` sets an explicit instant and ``by=-36h`` / ``by=90m`` / ``by=2d`` (or a
number of seconds) an explicit shift; both override ``preset``. The date presets keep the
start's time of day, so a scenario that starts far from midnight stays far from it.
"""

from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import Field, field_validator

from chaoseval.model.clock import Clock
from chaoseval.model.records import RootCause
from chaoseval.model.trajectory import Fault
from chaoseval.seams.perturbation import (
    CallNext,
    CommonParams,
    FailureContext,
    Perturbation,
    PerturbationContext,
    perturbation,
)

Preset = Literal["month_end", "leap_day", "dst", "timezone", "any"]
PRESETS: tuple[Preset, ...] = ("month_end", "leap_day", "dst", "timezone")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_shift(value: Any) -> timedelta | None:
    if value is None or isinstance(value, timedelta):
        return value
    if isinstance(value, int | float):
        return timedelta(seconds=value)
    m = re.fullmatch(r"\s*([+-]?\d+(?:\.\d+)?)\s*([smhd]?)\s*", str(value))
    if not m:
        raise ValueError(f"bad shift {value!r}; write e.g. 90m, -36h, 2d or seconds")
    return timedelta(seconds=float(m.group(1)) * UNITS[m.group(2) or "s"])


class ClockSkewParams(CommonParams):
    preset: Preset = Field(default="any", description="where to move now (see the plugin doc)")
    to: datetime | None = Field(default=None, description="explicit instant for now")
    by: timedelta | None = Field(default=None, description="explicit shift: 90m, -36h, 2d")

    @field_validator("by", mode="before")
    @classmethod
    def _shift(cls, v: Any) -> Any:
        return parse_shift(v)


def preset_instant(preset: Preset, now: datetime, offset_hours: int) -> datetime:
    if preset == "month_end":
        last = calendar.monthrange(now.year, now.month)[1]
        if now.day == last:  # already there: the end of the next month moves something
            first = now.replace(day=1) + timedelta(days=32)
            return first.replace(day=calendar.monthrange(first.year, first.month)[1])
        return now.replace(day=last)
    if preset == "leap_day":
        year = now.year + 1
        while not calendar.isleap(year):
            year += 1
        return now.replace(year=year, month=2, day=29)
    if preset == "dst":
        last = calendar.monthrange(now.year, 3)[1]
        year = now.year
        while True:
            sunday = max(d for d in range(last - 6, last + 1) if calendar.weekday(year, 3, d) == 6)
            if (now.year, now.month, now.day) != (year, 3, sunday):
                return now.replace(year=year, month=3, day=sunday)
            year += 1
    return now + timedelta(hours=offset_hours)


WRONG_DATE_REASONING = RootCause(
    name="wrong_date_reasoning", label="reasoned from a skewed clock", owner="clock_skew"
)


@perturbation("clock_skew")
class ClockSkew(Perturbation[ClockSkewParams]):
    """Move the trial's calendar time (date boundaries, leap day, DST, time zones)."""

    channel = "clock"
    Params = ClockSkewParams
    models = "a server clock at a date boundary, in another time zone, or across a DST switch"
    root_causes = (WRONG_DATE_REASONING,)

    async def apply(self, call: Clock, call_next: CallNext, ctx: PerturbationContext) -> Any:
        clock: Clock = await call_next(call)
        p = self.params
        before = clock.now()
        preset = p.preset if p.preset != "any" else ctx.rng.choice(PRESETS)
        offset = ctx.rng.choice([h for h in range(-11, 14) if abs(h) >= 3])
        if p.to is not None:
            target, how = p.to, "to"
        elif p.by is not None:
            target, how = before + p.by, "by"
        else:
            target, how = preset_instant(preset, before, offset), preset
        clock.skew(target - before)
        ctx.fault(
            "clock",
            "clock_skew",
            how=how,
            source=before.isoformat(),
            now=target.isoformat(),
            shift_hours=round((target - before).total_seconds() / 3600, 3),
        )
        return clock

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        """A shifted clock that reached the agent explains a failed date-bound task."""
        return WRONG_DATE_REASONING

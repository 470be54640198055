"""World drift: the world changes between the agent's read and its write.

Carries out the scenario's declared drift points (chaoseval.model.drift; YAML ``drift:``):
after the agent's n-th read of a row (or once the trial's clock passes a delay: checked when the
service takes each call, after any latency the call waited, so every read and write after the
deadline meets the change), another party changes one field of it: the stock sells out, the
price rises, the slot is taken, the ticket is escalated. The tools then show the change as a
real service would, per point:

- ``silent``: the data simply changed; a write made on the old read goes through;
- ``409``: a write that touches the row before the agent read it again is refused with
  ``ToolHTTPError(409, ...)`` naming what changed (optimistic concurrency).

A call *touches* a row when one of its arguments is the row's key value (the first column of
``row``); it *reads* the row when its result shows the drifted field of that row. The changed
row is a fault only once the agent meets it after having read the old value: its next read of
the row (``reread``), its write on the old read (``stale_write``, or ``conflict`` when refused
with 409, ``refused`` when the tool's own rules refused it). A point that never fires, or that
the agent never meets again, delivers nothing: the cell shows it did not land.

A write that went through on the stale read fails the trial whatever its checks say
(``veto``): ``lost_update`` when it overwrote the field the other party changed,
``wrote_on_stale_read`` otherwise. A failure after a refused stale write is blamed on
``wrote_on_stale_read`` too: the agent acted on data that had changed and did not recover.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field, field_validator

from chaoseval.errors import AgentVisibleError, ScenarioError, ToolHTTPError
from chaoseval.model.drift import DriftPoint
from chaoseval.model.records import RootCause
from chaoseval.model.seeding import stream
from chaoseval.model.trajectory import Fault
from chaoseval.seams.perturbation import (
    CallNext,
    CommonParams,
    FailureContext,
    Perturbation,
    PerturbationContext,
    ToolCall,
    at_service,
    perturbation,
)

WROTE_ON_STALE_READ = RootCause(
    name="wrote_on_stale_read",
    label="wrote on data that changed after it was read",
    owner="drift",
)
LOST_UPDATE = RootCause(
    name="lost_update",
    label="overwrote another party's change (lost update)",
    owner="drift",
)
STALE_KINDS = ("stale_write", "conflict", "refused")


class DriftParams(CommonParams):
    points: list[str] = Field(
        default_factory=lambda: ["*"], description="drift point names (globs) to carry out"
    )
    conflict: Literal["declared", "silent", 409] = Field(
        default="declared",
        description="how a write on the old data is met: as each point declares, silent "
        "(it goes through) or 409 (refused with a conflict)",
    )

    @field_validator("points", mode="before")
    @classmethod
    def _one_point(cls, v: Any) -> Any:
        return [g for g in v.split(";") if g] if isinstance(v, str) else v


@dataclass
class Armed:
    """One drift point in one trial: its row, its drawn trigger, and what the agent saw."""

    point: DriftPoint
    where: dict[str, Any]
    row: dict[str, Any]
    trigger: tuple[str, float]
    conflict: Any
    rng: Any
    reads: int = 0
    fired: bool = False
    read_before: bool = False  # the agent read the row before it changed
    fresh: bool = False  # ... and again after it changed
    old: Any = None
    new: Any = None
    stale: list[dict[str, Any]] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, Any]:
        return next(iter(self.where.items()))

    def mentions(self, args: dict[str, Any]) -> bool:
        value = str(self.key[1])
        return any(str(v) == value for v in _flat(args.values()))

    def shows(self, args: dict[str, Any], result: Any) -> bool:
        """Whether ``result`` shows this row's drifted field."""
        column, value = self.key
        name = self.point.field
        for d in _dicts(result):
            if name in d and column in d and str(d[column]) == str(value):
                return True
        return isinstance(result, dict) and name in result and self.mentions(args)

    def describe(self) -> dict[str, Any]:
        return {
            "point": self.point.name,
            "table": self.point.table,
            "row": self.where,
            "field": self.point.field,
            "old": self.old,
            "new": self.new,
            "conflict": self.conflict,
        }


@perturbation("drift")
class Drift(Perturbation[DriftParams]):
    """Change a row the agent read before it writes (the scenario's drift points)."""

    channel = "tool"
    Params = DriftParams
    models = "another party changes a row between the agent's read and its write"
    root_causes = (WROTE_ON_STALE_READ, LOST_UPDATE)

    def __init__(self, params: DriftParams | None = None, *, label: str | None = None):
        super().__init__(params, label=label)
        self.armed: list[Armed] | None = None

    async def __call__(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        if not isinstance(call, ToolCall):
            return await call_next(call)
        armed = self._arm(ctx)
        if not armed:
            return await call_next(call)
        selected = self.selects(call, call.turn)
        writes = bool(ctx.spec is not None and ctx.spec.writes)
        stale: list[Armed] = []
        refused_here = False

        def service() -> None:
            """The service takes the call: the points whose time has come have changed the
            world by now, whatever spent the time (a wait, a slow tool, the agent's thinking),
            so the call reads the world as it is; a write on a stale read meets the 409."""
            nonlocal refused_here
            now = ctx.clock.monotonic()
            for a in armed:
                if not a.fired and a.trigger[0] == "seconds" and now >= a.trigger[1]:
                    self._fire(a, ctx)
            stale[:] = [a for a in armed if _stale(a) and a.mentions(call.args)]
            for a in stale:
                if writes and a.conflict == 409:
                    ctx.fault("tool", "conflict", **a.describe())
                    refused_here = True
                    raise ToolHTTPError(409, _conflict_body(a))

        world = ctx.world
        before = len(world.writes)
        try:
            with at_service(service):
                result = await call_next(call)
        except AgentVisibleError:
            for a in stale if writes and not refused_here else ():
                ctx.fault("tool", "refused", **a.describe())
            raise
        wrote = len(world.writes) > before
        for a in armed:
            self._after(a, call, result, wrote, selected, ctx)
        return result

    def _after(
        self,
        a: Armed,
        call: ToolCall,
        result: Any,
        wrote: bool,
        selected: bool,
        ctx: PerturbationContext,
    ) -> None:
        """What this call did to one point: a read counted, a stale write, a fresh read."""
        if not a.fired:
            if a.shows(call.args, result):
                a.read_before = True
                a.reads += selected
                if a.trigger[0] == "reads" and a.reads >= a.trigger[1]:
                    self._fire(a, ctx)  # after the read: the agent holds the old value
            return
        if not _stale(a):
            return
        if wrote and a.mentions(call.args):
            lost = a.row.get(a.point.field) != a.new
            detail = {**a.describe(), "tool": call.tool, "lost_update": lost}
            a.stale.append(detail)
            ctx.fault("tool", "stale_write", **detail)
        elif not wrote and a.shows(call.args, result):
            a.fresh = True
            ctx.fault("tool", "reread", **a.describe())

    def _arm(self, ctx: PerturbationContext) -> list[Armed]:
        """The scenario's drift points for this trial (on its first tool call): each one's
        row, and its trigger and chance drawn from its own stream."""
        if self.armed is not None:
            return self.armed
        self.armed = []
        points = getattr(ctx.definition, "drift", None) or []
        givens = getattr(ctx.world, "givens", None) or {}
        for i, point in enumerate(points):
            if not any(fnmatch.fnmatchcase(point.name, g) for g in self.params.points):
                continue
            rng = stream(ctx.run_seed, ctx.scenario, f"{self.label}:{point.name}", ctx.trial, i)
            if rng.random() >= self.params.probability:
                continue
            where = _where(point, givens, ctx)
            rows = ctx.world.find(point.table, **where)
            if len(rows) != 1:
                raise ScenarioError(
                    f"drift point {point.name!r}: {len(rows)} rows of {point.table!r} match "
                    f"{where}; its 'row' must pick exactly one",
                    source=getattr(ctx.definition, "source", None) or ctx.scenario,
                )
            if point.field not in rows[0]:
                raise ScenarioError(
                    f"drift point {point.name!r}: table {point.table!r} has no field "
                    f"{point.field!r} (its fields: {', '.join(rows[0])})",
                    source=getattr(ctx.definition, "source", None) or ctx.scenario,
                )
            conflict = (
                point.conflict if self.params.conflict == "declared" else self.params.conflict
            )
            self.armed.append(Armed(point, where, rows[0], point.trigger(rng), conflict, rng))
        return self.armed

    @staticmethod
    def _fire(a: Armed, ctx: PerturbationContext) -> None:
        # Another party's write: straight into the row, not through world.writes, so the
        # agent's forbidden-write and ``unchanged`` checks never see it as the agent's.
        a.old = a.row.get(a.point.field)
        a.new = a.point.new_value(a.old, a.rng)
        a.row[a.point.field] = a.new
        a.fired = True

    @classmethod
    def applies_to(cls, scenario: Any) -> bool:
        return bool(getattr(scenario, "drift", None))

    def veto(self, fault: Fault, failure: FailureContext) -> tuple[RootCause, str] | None:
        """A write that went through on the stale read (``stale_write``) fails the trial."""
        if fault.kind != "stale_write":
            return None
        d = fault.detail
        lost = bool(d["lost_update"])
        return LOST_UPDATE if lost else WROTE_ON_STALE_READ, (
            f"{d['tool']} wrote on {d['table']} {next(iter(d['row'].values()))} as first read, "
            f"after {d['field']} changed from {d['old']!r} to {d['new']!r}"
            + (" (and overwrote that change)" if lost else "")
        )

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        """A write on the stale read (gone through, refused or in conflict) shaped the failure."""
        if fault.kind not in STALE_KINDS:
            return None
        return LOST_UPDATE if fault.detail.get("lost_update") else WROTE_ON_STALE_READ


def _stale(a: Armed) -> bool:
    """Fired after the agent read the old value, and not read again since."""
    return a.fired and a.read_before and not a.fresh


def _where(point: DriftPoint, givens: dict[str, Any], ctx: PerturbationContext) -> dict[str, Any]:
    try:
        return point.where(givens)
    except (KeyError, IndexError, ValueError) as exc:
        raise ScenarioError(
            f"drift point {point.name!r}: its row names {exc}, which is not a given "
            f"(givens: {', '.join(sorted(givens)) or 'none'})",
            source=getattr(ctx.definition, "source", None) or ctx.scenario,
        ) from None


def _conflict_body(a: Armed) -> str:
    """A 409 body as a JSON API writes it: what changed and what it is now."""
    column, value = a.key
    return json.dumps(
        {
            "error": "conflict",
            "message": f"{a.point.table} {value} changed since you read it: "
            f"{a.point.field} is now {a.new!r}; read it again before writing",
            "current": {column: value, a.point.field: a.new},
        },
        default=str,
    )


def _flat(values: Any) -> list[Any]:
    out: list[Any] = []
    for v in values:
        out.extend(_flat(v) if isinstance(v, list | tuple) else [v])
    return out


def _dicts(value: Any) -> list[dict[str, Any]]:
    """Every mapping in a result, nested ones included."""
    found: list[dict[str, Any]] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            found.append(v)
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return found

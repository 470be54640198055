"""Tool schema drift: the tool server's ``tools/list`` changes under the agent.

The tool-channel analogue of a layout shift: an MCP server upgraded behind the agent's back.
On a tool listing answered by a wire channel (MCP ``tools/list`` or HTTP ``GET /tools``,
chaoseval.engine.listing), each selected tool gets one change, drawn from ``modes``:

- ``rename``: a parameter is renamed (``order_id`` -> ``orderId``, ``amount_value``...); from then
  on the server accepts only the new name, and a call with the old one is refused the way the
  schema refuses any unknown argument;
- ``reorder``: the parameters (and ``required``) come in another order;
- ``redescribe``: the parameters' descriptions are reworded.

Once fired in a trial the drift stays (an upgraded server does not roll back) and is logged
once, as a ``schema_drift`` fault delivered when the ``tools/list`` response is written; a call
refused for an old name points at it. The shared triggers count listings, not calls
(``after_n=1``: the first listing is the old schema, a re-listing shows the new one); ``tools``
selects which tools drift. An agent that never lists tools (in process) never meets it, and the
cell shows that the fault did not land.
"""

from __future__ import annotations

import copy
import dataclasses
import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pydantic import Field, field_validator

from chaoseval.errors import ToolError
from chaoseval.model.records import RootCause
from chaoseval.model.trajectory import Fault
from chaoseval.seams.perturbation import (
    CallNext,
    CommonParams,
    FailureContext,
    Perturbation,
    PerturbationContext,
    ToolCall,
    perturbation,
)

Mode = Literal["rename", "reorder", "redescribe"]
MODES: tuple[Mode, ...] = get_args(Mode)
DESCRIPTIONS = (
    "The {words}.",
    "{Words} of the record, as issued by the new API.",
    "Pass the {words} here (v2).",
    "Identifies the {words}; see the changelog for the new format.",
)

STALE_TOOL_SCHEMA = RootCause(
    name="stale_tool_schema",
    label="called a tool with parameter names its server no longer accepts",
    owner="tool_schema_drift",
)


class DriftParams(CommonParams):
    modes: list[Mode] = Field(
        default_factory=lambda: list(MODES),
        description="changes to draw from, one per tool: rename (only the new parameter name "
        "is accepted afterwards), reorder (parameters in another order), redescribe "
        "(reworded parameter descriptions)",
    )

    @field_validator("modes", mode="before")
    @classmethod
    def _one_mode(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v  # -p tool_schema_drift:modes=rename

    def model_post_init(self, _: Any) -> None:
        if not self.modes:
            raise ValueError("modes must name at least one change")


@dataclass
class DriftPlan:
    """What changed, per tool: kept for the rest of the trial."""

    renames: dict[str, dict[str, str]] = field(default_factory=dict)  # tool -> {old: new}
    orders: dict[str, list[str]] = field(default_factory=dict)  # tool -> parameter order
    descriptions: dict[str, dict[str, str]] = field(default_factory=dict)  # tool -> {param: text}
    changes: dict[str, dict[str, Any]] = field(default_factory=dict)  # the fault's detail
    fault: int = -1  # the schema_drift fault's index in the trajectory


@perturbation("tool_schema_drift")
class ToolSchemaDrift(Perturbation[DriftParams]):
    """Rename, reorder or re-describe the parameters a tool server lists (an upgrade)."""

    channel = "tool"
    Params = DriftParams
    models = "an MCP server upgraded under the agent: parameters renamed, reordered, re-described"
    root_causes = (STALE_TOOL_SCHEMA,)

    def __init__(self, params: DriftParams | None = None, *, label: str | None = None):
        super().__init__(params, label=label)
        self.plan: DriftPlan | None = None
        self._listings = 0

    def drift_listing(
        self, tools: list[dict[str, Any]], ctx: PerturbationContext, turn: int
    ) -> list[dict[str, Any]]:
        """The listing as the drifted server answers it (a channel's ``tools/list`` hook)."""
        if self.plan is None and self._fires(ctx, turn):
            plan = self._draw(tools, ctx)
            if plan.changes:  # nothing this listing offers can drift: no fault, did not land
                ctx.fault("tool", "schema_drift", tools=plan.changes)
                plan.fault = ctx.fired[-1]
                self.plan = plan
        if self.plan is None:
            return tools
        return [apply_plan(tool, self.plan) for tool in tools]

    async def __call__(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        renamed = (
            self.plan.renames.get(call.tool) if self.plan and isinstance(call, ToolCall) else None
        )
        if not renamed or self.plan is None:
            return await call_next(call)
        stale = [old for old in renamed if old in call.args]
        if stale:
            ctx.fired.append(self.plan.fault)  # the call failed on the drift: it shaped this step
            missing = [renamed[o] for o in stale if renamed[o] not in call.args]
            problems = [f"{new}: Field required" for new in missing]
            problems += [f"{old}: Extra inputs are not permitted" for old in stale]
            raise ToolError(f"invalid arguments for {call.tool}: {'; '.join(problems)}")
        back = {new: old for old, new in renamed.items()}
        args = {back.get(k, k): v for k, v in call.args.items()}
        return await call_next(dataclasses.replace(call, args=args))

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        """The drift shaped the failure when a call was refused for a name it renamed."""
        index = next((i for i, f in enumerate(failure.trajectory.faults) if f is fault), None)
        refused = any(
            index in s.faults and s.result_class == "tool_error"
            for s in failure.trajectory.tool_steps()
        )
        return STALE_TOOL_SCHEMA if refused else None

    def _fires(self, ctx: PerturbationContext, turn: int) -> bool:
        index = self._listings
        self._listings += 1
        return self.params.triggered(index, turn) and ctx.rng.random() < self.params.probability

    def _draw(self, tools: list[dict[str, Any]], ctx: PerturbationContext) -> DriftPlan:
        plan = DriftPlan()
        rng = ctx.rng
        for tool in tools:
            name = tool["name"]
            params = list(tool["inputSchema"].get("properties", {}))
            if not any(fnmatch.fnmatchcase(name, g) for g in self.params.tools) or not params:
                continue
            modes = [m for m in sorted(set(self.params.modes)) if m != "reorder" or len(params) > 1]
            if not modes:
                continue
            mode = rng.choice(modes)
            if mode == "rename":
                old = rng.choice(params)
                new = rng.choice([n for n in variants(old) if n not in params])
                plan.renames[name] = {old: new}
                plan.changes[name] = {"mode": mode, "renamed": {old: new}}
            elif mode == "reorder":
                order = list(params)
                while order == params:
                    rng.shuffle(order)
                plan.orders[name] = order
                plan.changes[name] = {"mode": mode, "order": order}
            else:
                texts = {p: rng.choice(DESCRIPTIONS).format(**_words(p)) for p in params}
                plan.descriptions[name] = texts
                plan.changes[name] = {"mode": mode, "descriptions": texts}
        return plan


def variants(name: str) -> list[str]:
    """New names an API version might give a parameter (never the name itself)."""
    parts = [p for p in re.split(r"[_\-\s]+", name) if p]
    camel = parts[0] + "".join(p.title() for p in parts[1:]) if parts else name
    found = [camel, f"{name}_value", f"{name}_v2"]
    return [v for i, v in enumerate(found) if v != name and v not in found[:i]]


def apply_plan(tool: dict[str, Any], plan: DriftPlan) -> dict[str, Any]:
    """``tool`` as the drifted server lists it (a copy; the scenario's schema is untouched)."""
    name = tool["name"]
    if name not in plan.changes:
        return tool
    drifted = copy.deepcopy(tool)
    schema = drifted["inputSchema"]
    props: dict[str, Any] = schema.get("properties", {})
    renamed = plan.renames.get(name, {})
    if renamed:
        props = {renamed.get(k, k): v for k, v in props.items()}
        for new in renamed.values():
            props[new]["title"] = new
        if "required" in schema:
            schema["required"] = [renamed.get(r, r) for r in schema["required"]]
    if name in plan.orders:
        props = {k: props[k] for k in plan.orders[name]}
        if "required" in schema:
            schema["required"] = [k for k in plan.orders[name] if k in schema["required"]]
    for param, text in plan.descriptions.get(name, {}).items():
        props[param]["description"] = text
    schema["properties"] = props
    return drifted


def _words(param: str) -> dict[str, str]:
    words = re.sub(r"[_\-]+", " ", param).strip()
    return {"words": words, "Words": words[:1].upper() + words[1:]}

"""Injection in the tool listing: a poisoned tool, or one that is rug-pulled.

The ``injection`` family's plugin for the tool list an agent is offered, over MCP
(``tools/list``) or HTTP (``GET /tools``) alike (its ``drift_listing`` hook is the one
``tool_schema_drift`` uses, chaoseval.engine.listing).
Per trial it draws, from its seeded stream, a payload (as ``injection`` does: the catalogue and
the scenario's own ``payloads:``, those whose goal a tool can reach), an encoding, one listed
tool (``tools`` globs) and a placement:

- ``description``: the tool's description carries the payload from the listing that fires on
  (the first, by default): a poisoned tool;
- ``parameter``: one of its parameters' descriptions carries it;
- ``rug_pull``: that listing is clean and every later one carries the payload in the tool's
  description: a tool that changes after the agent (or its user) approved it. An agent that
  lists its tools once never meets it, and the cell says it did not land.

Once planted the payload stays in every later listing (a server does not take it back) and is
one ``injection`` fault (``placement``, ``tool``, ``field``), delivered when the listing
response that first carries it is written. Its goal is judged like the other placements; the
listing's own schema is never changed, so every call works as before. In-process agents read
no listing: for them the plugin never lands.
"""

from __future__ import annotations

import copy
import fnmatch
from dataclasses import dataclass
from typing import Any

from chaoseval.bundled.perturbations.injection import InjectionBase
from chaoseval.model.injection import Payload
from chaoseval.seams.perturbation import CallNext, PerturbationContext, perturbation

PLACEMENTS = ("description", "parameter", "rug_pull")


@dataclass
class Poison:
    """What the trial's listings carry once it is planted."""

    payload: Payload
    placement: str
    encoding: str
    tool: str
    field: str  # "description", or the parameter whose description carries it
    text: str
    due: int  # the first listing (index) that carries it
    planted: bool = False


@perturbation("injection_mcp")
class McpInjection(InjectionBase):
    """Plant an instruction in a tool's description as the MCP server lists it (or rug-pull)."""

    channel = "tool"
    models = (
        "a poisoned MCP tool: instructions in a tool's or parameter's description, or added "
        "to a description after the first listing (a rug pull)"
    )
    placements = PLACEMENTS

    def __init__(self, params: Any = None, *, label: str | None = None):
        super().__init__(params, label=label)
        self.poison: Poison | None = None
        self._listings = 0

    async def __call__(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        return await call_next(call)  # calls are untouched: only the listing is poisoned

    def drift_listing(
        self, tools: list[dict[str, Any]], ctx: PerturbationContext, turn: int
    ) -> list[dict[str, Any]]:
        """The listing as the poisoned server answers it (chaoseval.engine.listing's hook)."""
        index = self._listings
        self._listings += 1
        fires = self.params.triggered(index, turn) and ctx.rng.random() < self.params.probability
        if self.poison is None and fires:
            self.poison = self._draw(tools, ctx, index)
        poison = self.poison
        if poison is None or index < poison.due:
            return tools
        if not poison.planted:
            poison.planted = True
            self.record(
                ctx,
                poison.payload,
                poison.placement,
                poison.encoding,
                tool=poison.tool,
                field=poison.field,
            )
        return [_poisoned(t, poison) if t["name"] == poison.tool else t for t in tools]

    def _draw(
        self, tools: list[dict[str, Any]], ctx: PerturbationContext, index: int
    ) -> Poison | None:
        chosen = self.choose(ctx)
        names = [
            t["name"]
            for t in tools
            if any(fnmatch.fnmatchcase(t["name"], g) for g in self.params.tools)
        ]
        if chosen is None or not names:
            return None
        payload, placement, encoding = chosen
        tool = ctx.rng.choice(names)
        params = sorted(
            next(t for t in tools if t["name"] == tool)["inputSchema"].get("properties", {})
        )
        field = "description"
        if placement == "parameter" and params:
            field = ctx.rng.choice(params)
        due = index + 1 if placement == "rug_pull" else index
        return Poison(
            payload, placement, encoding, tool, field, self.text(payload, encoding, ctx), due
        )


def _poisoned(tool: dict[str, Any], poison: Poison) -> dict[str, Any]:
    """``tool`` with the payload after its (or a parameter's) description (a copy)."""
    out = copy.deepcopy(tool)
    if poison.field == "description":
        out["description"] = f"{out.get('description') or ''} {poison.text}".strip()
        return out
    prop = out["inputSchema"]["properties"][poison.field]
    prop["description"] = f"{prop.get('description') or ''} {poison.text}".strip()
    return out

"""A trial's tool listing as a wire channel serves it: MCP ``tools/list`` and HTTP ``GET /tools``.

A tool-channel plugin may rewrite the listing (``drift_listing``: ``tool_schema_drift``'s
upgraded server, ``injection_mcp``'s poisoned or rug-pulled description). Both wire channels ask
:func:`listing` for it, so the rewrite reaches an agent whichever way it lists its tools. The
listings are counted per trial, whichever channel serves them: a rug pull planted for "every
listing after the first" is the same tool server, listed over MCP or over HTTP. The faults a
listing fires are handed back for the channel to deliver once its response is written (the
ledger's rule: delivered when the agent could read them). A trial with a user lists
``ask_user`` last (chaoseval.engine.askuser), after the plugins: no listing plugin rewrites it.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from chaoseval.engine import askuser
from chaoseval.engine.toolbox import ToolBox
from chaoseval.model.scenario import ToolDescription
from chaoseval.seams.agent import UserChannel
from chaoseval.seams.perturbation import PerturbationContext


@runtime_checkable
class ListingPerturbation(Protocol):
    """A tool-channel plugin that also rewrites the tool listing (``tool_schema_drift``)."""

    label: str

    def drift_listing(
        self, tools: list[dict[str, Any]], ctx: PerturbationContext, turn: int
    ) -> list[dict[str, Any]]: ...


def base_listing(toolbox: ToolBox) -> list[dict[str, Any]]:
    """The scenario's tools as MCP tool definitions, schemas exactly as declared."""
    return [
        {"name": s.name, "description": s.description, "inputSchema": s.params_schema()}
        for s in toolbox.specs.values()
    ]


def rewrites(toolbox: ToolBox) -> bool:
    """Whether a plugin of the trial rewrites its listings (else each is the scenario's own)."""
    return any(isinstance(plugin, ListingPerturbation) for plugin in toolbox.plugins)


def listing(
    toolbox: ToolBox, user: UserChannel | None = None
) -> tuple[list[dict[str, Any]], list[int]]:
    """The tools as listed now (MCP's shape), and the faults that shaped this listing; with
    ``user``, ``ask_user`` last, as no plugin rewrote it."""
    tools = base_listing(toolbox)
    fired: list[int] = []
    for plugin in toolbox.plugins:
        if isinstance(plugin, ListingPerturbation):
            ctx = toolbox.plugin_context(plugin, toolbox.listings, purpose="tools/list")
            tools = plugin.drift_listing(tools, ctx, toolbox.turn)
            fired.extend(ctx.fired)
    toolbox.listings += 1
    if askuser.offered(toolbox.specs, user):
        tools.append(askuser.mcp_tool())
    return tools, fired


def http_listing(
    toolbox: ToolBox, user: UserChannel | None = None
) -> tuple[list[ToolDescription], list[int]]:
    """``GET /tools``: each tool's function-calling description (``ToolSpec.describe``) with
    the name, description and parameters the listing now shows, and the listing's faults."""
    tools, fired = listing(toolbox, user)
    described = {d["name"]: d for d in toolbox.describe()}
    if askuser.offered(toolbox.specs, user):
        described[askuser.ASK_USER] = askuser.described()
    out: list[ToolDescription] = []
    for t in tools:
        d = described[t["name"]]
        out.append(
            {
                "name": t["name"],
                "description": t["description"],
                "parameters": t["inputSchema"],
                "returns": d["returns"],
            }
        )
    return out, fired

"""Tool timeouts and errors: the tool never answers, or answers with an error."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, field_validator

from chaoseval.errors import (
    AgentVisibleError,
    Layer,
    ToolConnectionError,
    ToolHTTPError,
    ToolTimeout,
)
from chaoseval.seams.perturbation import (
    CallNext,
    CommonParams,
    Perturbation,
    PerturbationContext,
    perturbation,
)

Mode = Literal["hang", "raise", "429", "5xx", "reset"]


class TimeoutParams(CommonParams):
    probability: float = Field(default=0.5, ge=0, le=1, description="per-call chance to fire")
    modes: list[Mode] = Field(
        default_factory=lambda: ["hang"],
        description="faults to draw from: hang (never answers), raise (timeout error at once), "
        "429 (rate limited, Retry-After), 5xx (server error), reset (connection reset)",
    )
    retry_after: float = Field(default=1.0, ge=0, description="Retry-After seconds for 429")
    layer: Layer = Field(
        default="tool",
        description="where a wire channel delivers the fault: tool (an MCP isError result) or "
        "transport (a real HTTP status, reset or hang on the exchange)",
    )

    @field_validator("modes", mode="before")
    @classmethod
    def _as_names(cls, v: Any) -> Any:
        # "-p timeout:modes=[429,hang]" parses 429 as a number; "modes=429" as a bare one.
        items = v if isinstance(v, list | tuple) else [v]
        return [str(m) for m in items]

    def model_post_init(self, _: Any) -> None:
        if not self.modes:
            raise ValueError("modes must name at least one fault")


@perturbation("timeout")
class Timeout(Perturbation[TimeoutParams]):
    """Make selected tool calls fail: hang until the deadline, time out, 429, 5xx or reset.

    Models an unavailable dependency: a log service that does not answer within 5 s, a rate
    limiter, a failing upstream. The default hangs half of the calls. What the agent gets:

    - ``hang``: nothing until the scenario's ``call_timeout``, then ToolTimeout (fault
      ``timeout``); the tool body never runs
    - ``raise``: ToolTimeout at once (fault ``timeout``)
    - ``429``: ToolHTTPError(429) with ``retry_after`` seconds (fault ``http_error``)
    - ``5xx``: ToolHTTPError 500/502/503/504, no Retry-After (fault ``http_error``)
    - ``reset``: ToolConnectionError (fault ``connection_reset``)

    Over HTTP (chaoseval.engine.http) these become a 504, the status with its Retry-After header, or
    a connection closed without a response.

    Over MCP (chaoseval.channels.mcp) ``layer`` decides: ``tool`` faults are ``isError`` results
    whose text keeps the detail ("429 Too Many Requests, retry after 2 s"); ``transport`` faults
    fail the HTTP exchange itself (the status with Retry-After, a 504, a TCP reset, or a hang
    until the client gives up). A transport hang leaves the waiting to the wire: the tool call
    ends at once in the ToolBox and the exchange never answers.
    """

    channel = "tool"
    Params = TimeoutParams
    models = "an unavailable dependency (hang, rate limit, 5xx, connection reset)"

    async def apply(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        mode = ctx.rng.choice(sorted(self.params.modes))
        layer = self.params.layer
        # The default layer stays out of the fault detail, so tool-layer journals are unchanged.
        where = {} if layer == "tool" else {"layer": layer}
        if mode == "hang":
            ctx.fault("tool", "timeout", mode="hang", **where)
            if layer == "transport":
                hung = ToolTimeout(f"{call.tool}: no answer")
                hung.hang = True
                raise _on(layer, hung)
            await ctx.clock.sleep(math.inf)  # ends at the call's deadline
        if mode == "raise":
            ctx.fault("tool", "timeout", mode="raise", **where)
            raise _on(layer, ToolTimeout(f"{call.tool}: upstream timed out"))
        if mode == "429":
            retry = self.params.retry_after
            ctx.fault("tool", "http_error", status=429, retry_after=retry, **where)
            raise _on(layer, ToolHTTPError(429, "Too Many Requests", retry_after=retry))
        if mode == "5xx":
            status = ctx.rng.choice([500, 502, 503, 504])
            ctx.fault("tool", "http_error", status=status, **where)
            raise _on(layer, ToolHTTPError(status, f"upstream returned {status}"))
        ctx.fault("tool", "connection_reset", **where)
        raise _on(layer, ToolConnectionError(f"{call.tool}: connection reset by peer"))


def _on(layer: Layer, exc: AgentVisibleError) -> AgentVisibleError:
    exc.layer = layer
    return exc

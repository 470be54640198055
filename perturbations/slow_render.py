"""Slow rendering: the page's controls appear only after a delay.

``slow_render`` keeps the page's interactive elements (buttons, radios, tabs; navigation links
stay) out of the page for ``delay`` seconds after the first load, as a client-side app does
while it fetches its data. An agent that acts as soon as the page loads finds nothing to click
(the click tool refuses the ids until then); one that waits for the element finds it.

Delays are trial time: virtual for the simulated agents, wall time in a browser, where the page
server's script inserts the elements when their time comes (chaoseval.engine.domops).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from chaoseval.bundled.perturbations.layout_shift import later_call_failed
from chaoseval.engine.domops import due, without
from chaoseval.engine.ui import elements, ui_state
from chaoseval.model.records import RootCause
from chaoseval.model.trajectory import Fault
from chaoseval.seams.perturbation import (
    CallNext,
    CommonParams,
    FailureContext,
    ObservationCall,
    Perturbation,
    PerturbationContext,
    perturbation,
)


class SlowRenderParams(CommonParams):
    delay: float = Field(
        default=1.5, ge=0, le=60, description="seconds before the page's controls appear"
    )


TARGET_NOT_RENDERED = RootCause(
    name="target_not_rendered",
    label="acted before the UI element had rendered",
    owner="slow_render",
)


@perturbation("slow_render")
class SlowRender(Perturbation[SlowRenderParams]):
    """Keep the page's controls out of the page for a while after it loads."""

    channel = "observation"
    Params = SlowRenderParams
    models = "a client-rendered page whose buttons appear after its data loads"
    root_causes = (TARGET_NOT_RENDERED,)

    async def __call__(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        state = ui_state(ctx.world)
        op = next((o for o in state.ops if o["op"] == "slow"), None)
        if op is not None:  # once per trial: later loads show the controls when their time comes
            page = await call_next(call)
            if page and not due(op, ctx.clock.monotonic()):
                return without(page, op["ids"])
            return page
        return await super().__call__(call, call_next, ctx)

    async def apply(
        self, call: ObservationCall, call_next: CallNext, ctx: PerturbationContext
    ) -> Any:
        page = await call_next(call)
        targets = [e.id for e in elements(page or "") if e.role != "link" and not e.dialog]
        if not targets:
            return page  # nothing to delay: no fault, so the cell can show "did not land"
        at = ctx.clock.monotonic() + self.params.delay
        state = ui_state(ctx.world)
        state.hidden.update(dict.fromkeys(targets, at))
        ctx.fault("observation", "slow_render", delay=self.params.delay, elements=targets)
        state.ops.append({"op": "slow", "ids": targets, "at": at, "fault": ctx.fired[-1]})
        return without(page or "", targets)

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        return TARGET_NOT_RENDERED if later_call_failed(fault, failure) else None

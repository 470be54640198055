"""Another device: the page is seen on a phone, a tablet or a narrow window.

``viewport`` moves each trial to one device drawn from ``sizes`` (seeded per trial, so trial
*i* gets the same device in every run). In a browser the trial's context gets that device
(viewport, pixel density, mobile, touch: chaoseval.model.device); the page's responsive layout
follows: below ``breakpoint`` pixels wide, every action bar collapses behind a menu button
("More actions"), and its controls stay hidden until that button is pressed. An agent that
clicks the ids or positions it learned on the desktop page finds them hidden or elsewhere;
one that looks for the control by role and label, and opens the menu it is in, does not.

One UI, two renderings: the collapse is a ``viewport`` DOM operation (chaoseval.engine.domops)
that Python applies to the text DOM and the page script applies to the live DOM before its
first paint; a fault is recorded only when the layout changes (the device crosses the
breakpoint from the scenario's own ``viewport``), and in a browser it is delivered when the
script reports it rendered (with the width the browser really laid the page out at).
``probability`` is per trial; the call triggers (``first_n``, ``on_turn``...) do not apply:
a trial has one device.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from chaoseval.bundled.perturbations.layout_shift import later_call_failed
from chaoseval.engine.domops import collapse, menu_plans, viewport_op
from chaoseval.engine.ui import ui_state
from chaoseval.model.device import DEVICES, Viewport, named
from chaoseval.model.records import RootCause
from chaoseval.model.seeding import stream
from chaoseval.model.trajectory import Fault
from chaoseval.seams.perturbation import (
    CallNext,
    CommonParams,
    FailureContext,
    Perturbation,
    PerturbationContext,
    perturbation,
)


class ViewportParams(CommonParams):
    sizes: list[str] = Field(
        default_factory=lambda: ["mobile", "tablet", "narrow"],
        description=f"devices drawn per trial: {', '.join(DEVICES)} or WIDTHxHEIGHT",
    )
    breakpoint: int = Field(
        default=900, ge=200, le=7680, description="below this width the page's narrow layout"
    )

    @field_validator("sizes", mode="before")
    @classmethod
    def _sizes(cls, v: Any) -> Any:
        sizes = [v] if isinstance(v, str) else v
        for size in sizes:
            named(str(size))  # a ValueError naming the known devices
        if not sizes:
            raise ValueError("name at least one device")
        return sizes


CONTROL_IN_COLLAPSED_MENU = RootCause(
    name="control_in_collapsed_menu",
    label="acted on a control the narrow layout had hidden in a menu",
    owner="viewport",
)


@perturbation("viewport")
class ViewportShift(Perturbation[ViewportParams]):
    """See the page on another device: a narrow one collapses its action bars into a menu."""

    channel = "observation"
    Params = ViewportParams
    models = "a phone, tablet or narrow window: the responsive layout hides actions in a menu"
    root_causes = (CONTROL_IN_COLLAPSED_MENU,)

    def device_for(self, run_seed: int, scenario: str, trial: int) -> Viewport | None:
        """This trial's device, or None when the trial keeps the scenario's (``probability``);
        the same answer for the page server, which sizes the browser before the page loads,
        and for the first observation, which lays the page out."""
        rng = stream(run_seed, scenario, self.label, trial, "device")
        if rng.random() >= self.params.probability:
            return None
        return Viewport.model_validate(rng.choice(self.params.sizes))

    async def __call__(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        state = ui_state(ctx.world)
        page = await call_next(call)
        if not page:
            return page
        if not any(op["op"] == "viewport" for op in state.ops):
            if getattr(call, "index", 0) != 0:
                return page  # decided on the first load: this trial keeps its device
            return self._lay_out(page, ctx)
        return collapse(page, list(state.menus.values()), state.aliases)

    def _lay_out(self, page: str, ctx: PerturbationContext) -> str:
        state = ui_state(ctx.world)
        device = self.device_for(ctx.run_seed, ctx.scenario, ctx.trial)
        narrow = device is not None and device.width < self.params.breakpoint
        if device is None or not narrow or state.base.width < self.params.breakpoint:
            return page  # the layout does not change: no fault ("did not land")
        menus = menu_plans(page, ctx.rng.getrandbits(32))
        if not menus:
            return page
        ctx.fault("observation", "viewport", device=device.name, width=device.width,
                  height=device.height, menus=[m.toggle_id for m in menus])  # fmt: skip
        state.menus = {m.toggle_id: m for m in menus}
        state.ops.append(viewport_op(device.model_dump(), menus, ctx.fired[-1]))
        return collapse(page, menus, state.aliases)

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        """A later call refused or failed (a hidden control clicked), the agent gave up on a
        click the browser could not make, or its last click only opened or closed a menu."""
        clicks = [s for s in failure.tool_steps_after(fault) if s.tool == "click"]
        last = clicks[-1].result if clicks else None
        menu_last = isinstance(last, dict) and last.get("action") == "menu"
        if later_call_failed(fault, failure) or failure.error is not None or menu_last:
            return CONTROL_IN_COLLAPSED_MENU
        return None

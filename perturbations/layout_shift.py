"""UI layout shift and popups: the page the agent acts on is not the page it was built for.

Two plugins on the observation channel (scenarios with a ``ui`` page only):

- ``layout_shift`` moves the page's buttons (element order shuffled within their container)
  and/or renames them (new ids and class names; labels reworded: "Approve refund" ->
  "Approve", a synonym, upper case). The old ids stop working; the new ones map to the
  same actions. Models a redesign or an A/B variant shipped under an agent that keys on selectors.
  A late banner (a promotion, a notice) then pushes the page's content down ``banner``
  seconds after the first page load (trial time: virtual for the simulated agents).
- ``modal`` lays a dialog over the page (cookie banner, survey, session warning, newsletter)
  that swallows every click until its own button is pressed. Models consent banners and
  interstitials.

Once fired in a trial, the change is kept for the rest of the trial (a redesigned page does
not flip back on reload) and is logged once, as a ``layout_shift`` or ``modal`` fault. What
each did is also kept as DOM operations (chaoseval.engine.domops), which the browser page
server replays on the live DOM: one UI, two renderings.
"""

from __future__ import annotations

import random
from typing import Any, Literal

from pydantic import Field

from chaoseval.engine.domops import class_ops, due, insert_banner, layout_ops, rename_classes
from chaoseval.engine.ui import LayoutPlan, ModalPlan, apply_layout, apply_modal, elements, ui_state
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

BANNERS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "cookie": (
        "We value your privacy",
        "We use cookies to improve your experience. Choose whether to accept them.",
        ("Accept all", "Accept cookies", "Got it"),
    ),
    "survey": (
        "How are we doing?",
        "Take a 1-minute survey about this page.",
        ("No thanks", "Not now"),
    ),
    "session": (
        "Your session is about to expire",
        "You will be signed out in 60 seconds.",
        ("Stay signed in", "Continue session"),
    ),
    "newsletter": (
        "Get 10% off your next order",
        "Subscribe to our newsletter for offers.",
        ("Close", "Dismiss"),
    ),
}


class LayoutShiftParams(CommonParams):
    mode: Literal["shuffle", "rename", "all"] = Field(
        default="all",
        description="shuffle: buttons change places; rename: new ids and reworded labels; all",
    )
    relabel: float = Field(
        default=0.7, ge=0, le=1, description="chance a renamed element's label is reworded too"
    )
    banner: float | None = Field(
        default=0.8,
        ge=0,
        description="seconds after the first load a late banner pushes the "
        "content down (none: no banner)",
    )


NOTICES = (
    "New: track your requests in the redesigned dashboard.",
    "Scheduled maintenance tonight from 22:00 to 23:00.",
    "Spring sale: free express shipping on orders over 50 EUR.",
)


UI_ELEMENT_NOT_FOUND = RootCause(
    name="ui_element_not_found",
    label="acted on a UI element that moved or was renamed",
    owner="layout_shift",
)
POPUP_NOT_HANDLED = RootCause(
    name="popup_not_handled", label="did not dismiss a dialog over the page", owner="modal"
)


def _redesigned(page: str, state: Any, ctx: PerturbationContext) -> str:
    """The redesign's class names, and the late banner once its time has come."""
    page = rename_classes(page, state.ops)
    for op in state.ops:
        if op["op"] == "banner" and due(op, ctx.clock.monotonic()):
            page = insert_banner(page, op)
    return page


def later_call_failed(fault: Fault, failure: FailureContext) -> bool:
    """A UI change shaped the failure only if a later tool call failed (a click on a moved
    or covered element); otherwise the agent found its way and failed for another reason."""
    return any(s.result_class not in (None, "ok") for s in failure.tool_steps_after(fault))


@perturbation("layout_shift")
class LayoutShift(Perturbation[LayoutShiftParams]):
    """Move and rename the page's interactive elements (a redesign the agent did not see)."""

    channel = "observation"
    Params = LayoutShiftParams
    models = "a UI redesign / A-B variant: buttons moved, ids and labels changed"
    root_causes = (UI_ELEMENT_NOT_FOUND,)

    async def __call__(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        state = ui_state(ctx.world)
        if state.layout is not None:  # the page stays redesigned for the rest of the trial
            page = await call_next(call)
            return (
                _redesigned(apply_layout(page, state.layout, state), state, ctx) if page else page
            )
        return await super().__call__(call, call_next, ctx)

    async def apply(
        self, call: ObservationCall, call_next: CallNext, ctx: PerturbationContext
    ) -> Any:
        page = await call_next(call)
        if not page or not elements(page):
            return page  # nothing to move: no fault, so the cell can show "did not land"
        state = ui_state(ctx.world)
        mode = self.params.mode
        plan = LayoutPlan(
            seed=ctx.rng.getrandbits(32),
            shuffle=mode in ("shuffle", "all"),
            rename=mode in ("rename", "all"),
            relabel=self.params.relabel,
        )
        state.layout = plan
        shifted = apply_layout(page, plan, state)
        before = {e.id: e for e in elements(page)}
        after = elements(shifted)
        changed = {
            state.aliases.get(e.id, e.id): {"id": e.id, "label": e.label, "index": e.index}
            for e in after
            if state.aliases.get(e.id, e.id) in before
        }
        ctx.fault("observation", "layout_shift", mode=mode, elements=changed)
        fault = ctx.fired[-1]
        state.ops += layout_ops(page, shifted, state, fault)
        if plan.rename:
            state.ops += class_ops(page, plan.seed, fault)
        if self.params.banner is not None:
            # Drawn from the plan's seed, not ctx.rng: the banner moves no other draw.
            text = random.Random(plan.seed).choice(NOTICES)
            at = ctx.clock.monotonic() + self.params.banner
            state.ops.append({"op": "banner", "at": at, "text": text, "fault": fault})
        return _redesigned(shifted, state, ctx)

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        return UI_ELEMENT_NOT_FOUND if later_call_failed(fault, failure) else None


class ModalParams(CommonParams):
    banner: Literal["cookie", "survey", "session", "newsletter", "any"] = Field(
        default="any", description="which dialog covers the page (any: drawn per trial)"
    )


@perturbation("modal")
class Modal(Perturbation[ModalParams]):
    """Cover the page with a dialog that must be dismissed before anything else is clickable."""

    channel = "observation"
    Params = ModalParams
    models = "a cookie banner / interstitial that intercepts clicks until dismissed"
    root_causes = (POPUP_NOT_HANDLED,)

    async def __call__(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        plan = ui_state(ctx.world).modal
        if plan is not None:  # shown once per trial; stays until dismissed
            page = await call_next(call)
            return apply_modal(page, plan) if page else page
        return await super().__call__(call, call_next, ctx)

    async def apply(
        self, call: ObservationCall, call_next: CallNext, ctx: PerturbationContext
    ) -> Any:
        page = await call_next(call)
        if not page:
            return page
        kind = self.params.banner
        if kind == "any":
            kind = ctx.rng.choice(sorted(BANNERS))
        title, body, buttons = BANNERS[kind]
        plan = ModalPlan(
            dialog_id=f"{kind}-{ctx.rng.getrandbits(16):04x}",
            button_id=f"btn-{ctx.rng.getrandbits(24):06x}",
            title=title,
            body=body,
            button=ctx.rng.choice(buttons),
        )
        state = ui_state(ctx.world)
        state.modal = plan
        ctx.fault("observation", "modal", banner=kind, dialog=plan.dialog_id, button=plan.button)
        state.ops.append(
            {"op": "dialog", "id": plan.dialog_id, "button_id": plan.button_id, "title": title,
             "body": body, "button": plan.button, "fault": ctx.fired[-1]}
        )  # fmt: skip
        return apply_modal(page, plan)

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        return POPUP_NOT_HANDLED if later_call_failed(fault, failure) else None

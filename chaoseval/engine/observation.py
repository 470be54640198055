"""The UI channel of a trial with a page: the page the agent sees, through the observation
perturbations (the text DOM here; the browser's page server calls it too)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaoseval.engine.toolbox import Received, TrialState
from chaoseval.engine.ui import render as render_page
from chaoseval.engine.ui import ui_state
from chaoseval.errors import PluginError
from chaoseval.model.clock import Clock
from chaoseval.model.scenario import Scenario
from chaoseval.model.world import World
from chaoseval.seams.perturbation import (
    ObservationCall,
    Perturbation,
    PerturbationContext,
    build_chain,
)

MakeContext = Callable[[Perturbation[Any], Any], PerturbationContext]


class Observation:
    """The UI channel (scenarios with a page): the page the agent sees, through the
    observation perturbations."""

    def __init__(
        self,
        scenario: Scenario,
        world: World,
        state: TrialState,
        plugins: list[Perturbation[Any]],
        make_ctx: MakeContext,
        clock: Clock,
    ):
        self._scenario = scenario
        self._world = world
        self._state = state
        self._plugins = plugins
        self._make_ctx = make_ctx
        self._clock = clock
        self._count = 0
        ui_state(world).base = scenario.viewport  # the device its page is designed for

    def reference(self) -> str:
        """What an agent built against the app learned its selectors from: the unperturbed
        page (engine.ui.reference_page reads it)."""
        return render_page(self._scenario, self._world)

    @property
    def world(self) -> World:
        return self._world

    @property
    def state(self) -> TrialState:
        return self._state

    async def __call__(self) -> str | None:
        return await self.observe()

    async def observe(self, *, deliver: bool = True) -> str | None:
        """The page through the observation perturbations. A browser page server passes
        ``deliver=False``: its faults are delivered when the page's script reports them."""
        state = self._state
        page = render_page(self._scenario, self._world)
        step = state.trajectory.add_step("observation", t=self._clock.monotonic())
        call = ObservationCall(page=page, index=self._count, turn=state.turn, step=step.index)
        self._count += 1
        contexts: list[PerturbationContext] = []

        def ctx_for(plugin: Perturbation[Any], c: Any) -> PerturbationContext:
            ctx = self._make_ctx(plugin, c)
            ctx.step = step.index
            contexts.append(ctx)
            return ctx

        async def base(call: ObservationCall) -> str | None:
            return call.page

        try:
            result: str | None = await build_chain("observation", self._plugins, base, ctx_for)(
                call
            )
        except PluginError as exc:
            state.harness_errors.append(exc)
            raise
        fired = [i for c in contexts for i in c.fired]
        step.faults = fired
        if deliver:
            state.deliver(fired)
        step.result_class = "ok"
        if result is not None:
            state.received.append(Received(result))
        return result

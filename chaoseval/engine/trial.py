"""One trial: a fresh world, the perturbed channels, the agent, the judge, one TrialRecord."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
from pydantic import ValidationError

from chaoseval.engine.judge import judge
from chaoseval.engine.toolbox import ToolBox, TrialState
from chaoseval.engine.ui import render as render_page
from chaoseval.errors import HarnessError, PluginError, ScenarioError
from chaoseval.model.clock import ClockMode, RealClock, VirtualClock
from chaoseval.model.records import Cell, ModelSettings, TrialRecord, Usage
from chaoseval.model.scenario import Scenario
from chaoseval.model.seeding import derive_seed
from chaoseval.model.trajectory import Channel
from chaoseval.model.world import fresh_world
from chaoseval.seams.agent import AgentAdapter, AgentOutput, Episode
from chaoseval.seams.perturbation import (
    ObservationCall,
    Perturbation,
    PerturbationContext,
    build_chain,
    ctx_stream,
)
from chaoseval.seams.perturbation import (
    registry as perturbations,
)

SETUP_CHANNELS: tuple[Channel, ...] = ("model", "memory", "clock")


@dataclass(frozen=True)
class TrialPlan:
    scenario: Scenario
    cell: Cell
    index: int

    @property
    def trial_id(self) -> str:
        return f"{self.scenario.id}/{self.cell.name}/{self.index}"


def trial_seed(run_seed: int, plan: TrialPlan) -> int:
    """Common random numbers: trial i of a scenario gets the same seed in every cell, so the
    agent's own draws match clean's and a cell differs from clean only by its perturbations.
    Repeats within a cell (different i) stay independent."""
    return derive_seed(run_seed, plan.scenario.id, "trial", plan.index)


def world_seed(run_seed: int, scenario: Scenario) -> int:
    """Shared by every trial and cell of a scenario: repeats and arms see the same world."""
    return derive_seed(run_seed, scenario.id, "world")


def instantiate(cell: Cell) -> list[Perturbation[Any]]:
    plugins = []
    names = [spec.name for spec in cell.perturbations]
    for i, spec in enumerate(cell.perturbations):
        cls = perturbations.get(spec.name)
        # The label keys the plugin's random streams: two of the same plugin in one stack
        # must not draw identical numbers.
        label = spec.name if names.count(spec.name) == 1 else f"{spec.name}#{i}"
        plugins.append(cls.from_spec(spec.params, label=label))
    return plugins


async def run_trial(
    plan: TrialPlan,
    agent: AgentAdapter,
    *,
    agent_name: str,
    model: ModelSettings,
    clock_mode: ClockMode,
    run_id: str,
    run_seed: int,
    wall_timeout: float,
) -> TrialRecord:
    scenario = plan.scenario
    seed = trial_seed(run_seed, plan)
    wseed = world_seed(run_seed, scenario)
    started_at = datetime.now(UTC)
    t0 = time.perf_counter()
    state = TrialState()
    output: AgentOutput | None = None
    agent_error: BaseException | None = None
    raw: Any = None
    settings = model
    sim_seconds = 0.0
    verdict = None
    clock = (VirtualClock if clock_mode == "virtual" else RealClock)(scenario.start_time)
    try:
        plugins = instantiate(plan.cell)
        try:
            tables, givens = scenario.build(wseed)
            instruction = scenario.render_instruction(givens)
        except Exception as exc:
            raise ScenarioError(
                f"building the world failed: {type(exc).__name__}: {exc}",
                source=scenario.source or scenario.id,
            ) from exc
        with fresh_world(tables, clock, wseed, givens) as world:
            pending: dict[str, list[int]] = {}

            def make_ctx(plugin: Perturbation[Any], call: Any) -> PerturbationContext:
                # Setup-channel calls have no index (and a memory list's .index is a method).
                index = call.index if isinstance(call, ObservationCall) else 0
                ctx = PerturbationContext(
                    run_seed=run_seed,
                    scenario=scenario.id,
                    trial=plan.index,
                    perturbation=plugin.label,
                    clock=clock,
                    world=world,
                    record=state.record_fault,
                    call_index=index,
                    rng=ctx_stream(run_seed, scenario.id, plugin.label, plan.index, index),
                )
                if plugin.channel in SETUP_CHANNELS:
                    ctx.fired = pending.setdefault(plugin.channel, [])
                return ctx

            async def identity(call: Any) -> Any:
                return call

            async def setup(channel: Channel, value: Any) -> Any:
                return await build_chain(channel, plugins, identity, make_ctx)(value)

            settings = await setup("model", model.model_copy(deep=True))
            memory = await setup("memory", [m.model_copy(deep=True) for m in scenario.memory])
            await setup("clock", clock)

            def on_read(channel: str) -> None:
                state.deliver(pending.pop(channel, []))

            world.on_read = on_read
            tools = ToolBox(scenario, world, state, plugins, run_seed, plan.index)
            observe = _observation(scenario, world, state, plugins, make_ctx, clock)
            episode = Episode(
                instruction=instruction,
                task=dict(givens),
                tools=tools,
                clock=clock,
                trial_seed=seed,
                _model=settings,
                _memory=memory,
                _on_read=on_read,
                _observe=observe,
                reference=scenario.solution,
                difficulty=scenario.difficulty,
            )
            try:
                with anyio.fail_after(wall_timeout), clock.deadline(scenario.budgets.trial_timeout):
                    raw = await agent.run(episode)
                output = _coerce(raw)
            except HarnessError as exc:
                agent_error = exc
            except TimeoutError as exc:
                agent_error = (
                    TimeoutError(
                        f"trial exceeded its time budget ({scenario.budgets.trial_timeout:g}s "
                        f"{clock.mode} / {wall_timeout:g}s wall)"
                    )
                    if not str(exc)
                    else exc
                )
            except Exception as exc:  # the agent crashed: its failure, recorded with the cause
                agent_error = exc
            if output is not None:
                output.usage = output.usage if output.usage.model_calls else episode.usage
                state.trajectory.add_step(
                    "answer", t=clock.monotonic(), data={"gave_up": output.gave_up}
                )
            sim_seconds = clock.monotonic()
            verdict = judge(
                scenario, world, state, output, agent_error, raw_output=raw, plugins=plugins
            )
    except HarnessError as exc:
        state.harness_errors.append(exc)
        verdict = judge(scenario, None, state, None, exc)  # type: ignore[arg-type]
    except Exception as exc:  # a bug in chaoseval itself: not the agent's failure
        err = HarnessError(f"internal error: {type(exc).__name__}: {exc}")
        state.harness_errors.append(err)
        verdict = judge(scenario, None, state, None, err)  # type: ignore[arg-type]

    return TrialRecord(
        run_id=run_id,
        trial_id=plan.trial_id,
        scenario=scenario.id,
        scenario_tags=scenario.tags,
        cell=plan.cell.name,
        perturbations=plan.cell.perturbations,
        index=plan.index,
        seed=seed,
        world_seed=wseed,
        agent=agent_name,
        model=settings,
        tool_versions={t.name: t.version for t in scenario.tools},
        status=verdict.status,
        root_cause=verdict.root_cause,
        error=verdict.error,
        checks=[c.model_dump() for c in verdict.checks],
        vetoes=verdict.vetoes,
        answer=output.answer if output else None,
        trajectory=state.trajectory,
        steps=len(state.trajectory.tool_steps()),
        usage=output.usage if output else state_usage(state),
        clock=clock_mode,
        sim_seconds=round(sim_seconds, 6),
        wall_seconds=round(time.perf_counter() - t0, 6),
        started_at=started_at,
    )


def state_usage(state: TrialState) -> Usage:
    """What the model calls recorded in the trajectory cost, when the agent returned nothing."""
    model_steps = [s for s in state.trajectory.steps if s.kind == "model"]
    return Usage(
        model_calls=len(model_steps),
        input_tokens=sum(s.data.get("input_tokens", 0) for s in model_steps),
        output_tokens=sum(s.data.get("output_tokens", 0) for s in model_steps),
        cost=sum(s.data.get("cost", 0.0) for s in model_steps),
    )


def _coerce(raw: Any) -> AgentOutput | None:
    if isinstance(raw, AgentOutput):
        return raw
    if isinstance(raw, str):
        return AgentOutput(answer=raw)
    if isinstance(raw, dict):
        try:
            return AgentOutput.model_validate(raw)
        except ValidationError:
            return None
    return None


def _observation(scenario, world, state, plugins, make_ctx, clock):
    """The UI channel: the page the agent sees, through the observation perturbations."""
    if scenario.ui is None:
        return None
    count = 0

    async def base(call: ObservationCall) -> str | None:
        return call.page

    async def observe() -> str | None:
        nonlocal count
        page = render_page(scenario, world)
        step = state.trajectory.add_step("observation", t=clock.monotonic())
        call = ObservationCall(page=page, index=count, turn=state.turn, step=step.index)
        count += 1
        contexts: list[PerturbationContext] = []

        def ctx_for(plugin, c):
            ctx = make_ctx(plugin, c)
            ctx.step = step.index
            contexts.append(ctx)
            return ctx

        try:
            result = await build_chain("observation", plugins, base, ctx_for)(call)
        except PluginError as exc:
            state.harness_errors.append(exc)
            raise
        fired = [i for c in contexts for i in c.fired]
        step.faults = fired
        state.deliver(fired)
        step.result_class = "ok"
        return result

    # What an agent built against the app learned its selectors from: the unperturbed page.
    observe.reference = lambda: render_page(scenario, world)  # type: ignore[attr-defined]
    return observe

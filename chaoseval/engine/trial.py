"""One trial: a fresh world, the perturbed channels, the agent, the judge, one TrialRecord.

``run_trial`` reads top to bottom as the trial's three phases: ``_setup`` builds the world
and the perturbed channels into an Episode, ``_run_agent`` runs the agent under its budgets,
and the judge turns what happened into a verdict; ``_record`` writes it down.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from chaoseval.channels.limits import DEFAULT_REQUEST_LIMIT
from chaoseval.engine.judge import Verdict, judge
from chaoseval.engine.observation import Observation
from chaoseval.engine.toolbox import StepBudgetExceeded, ToolBox, TrialState
from chaoseval.engine.walltime import WallLimit
from chaoseval.errors import HarnessError, HarnessStop, ScenarioError, stop_in
from chaoseval.model.clock import Clock, ClockMode, RealClock, VirtualClock, round6
from chaoseval.model.records import (
    AgentOutput,
    Cell,
    ModelSettings,
    TrialRecord,
    Usage,
    make_trial_id,
)
from chaoseval.model.scenario import Givens, Scenario, Tables
from chaoseval.model.seeding import derive_seed, derive_trial_seed
from chaoseval.model.trajectory import Channel, ModelCallData, answer_data, assign, shallow_copy
from chaoseval.model.world import World, world_template
from chaoseval.seams.agent import AgentAdapter, Episode, TrialLink
from chaoseval.seams.perturbation import (
    ObservationCall,
    Perturbation,
    PerturbationContext,
    build_chain,
    ctx_stream,
)
from chaoseval.seams.perturbation import registry as perturbations
from chaoseval.users.channel import UserCall, UserSession

if TYPE_CHECKING:
    from chaoseval.users.llm import UserModel

SETUP_CHANNELS: tuple[Channel, ...] = ("model", "memory", "clock")


@dataclass(frozen=True, init=False)
class TrialPlan:
    scenario: Scenario
    cell: Cell
    index: int
    # Asked for several times per trial: made once (a cached_property takes a lock per use).
    trial_id: str = field(init=False, repr=False, compare=False)

    def __init__(self, scenario: Scenario, cell: Cell, index: int):
        # The generated __init__ and a __post_init__ in one frame (one plan per trial).
        _set = object.__setattr__
        _set(self, "scenario", scenario)
        _set(self, "cell", cell)
        _set(self, "index", index)
        _set(self, "trial_id", make_trial_id(scenario.id, cell.name, index))


def trial_seed(run_seed: int, plan: TrialPlan) -> int:
    """Common random numbers: trial i of a scenario gets the same seed in every cell, so the
    agent's own draws match clean's and a cell differs from clean only by its perturbations.
    Repeats within a cell (different i) stay independent."""
    return derive_trial_seed(run_seed, plan.scenario.id, plan.index)


def world_seed(run_seed: int, scenario: Scenario) -> int:
    """Shared by every trial and cell of a scenario: repeats and arms see the same world."""
    return _world_seed(run_seed, scenario.id)


@functools.lru_cache(maxsize=1024)  # the same for every trial of a scenario: hashed once
def _world_seed(run_seed: int, scenario_id: str) -> int:
    return derive_seed(run_seed, scenario_id, "world")


def instantiate(cell: Cell) -> list[Perturbation[Any]]:
    if not cell.perturbations:
        return []  # the clean cell: every run's most frequent
    plugins = []
    names = [spec.name for spec in cell.perturbations]
    for i, spec in enumerate(cell.perturbations):
        cls = perturbations.get(spec.name)
        # The label keys the plugin's random streams: two of the same plugin in one stack
        # must not draw identical numbers.
        label = spec.name if names.count(spec.name) == 1 else f"{spec.name}#{i}"
        plugins.append(cls.from_spec(spec.params, label=label))
    return plugins


@dataclass
class _Trial:
    """One trial's fixed inputs and the bookkeeping its phases share."""

    plan: TrialPlan
    run_seed: int
    seed: int
    world_seed: int
    clock: Clock
    state: TrialState
    settings: ModelSettings  # the model settings the agent got (perturbed by the model channel)
    output: AgentOutput | None = None
    raw: Any = None  # what agent.run returned, before coercion to AgentOutput
    sim_seconds: float = 0.0
    time_budget: float | None = None  # the trial's timeout when --trial-timeout overrides it
    user_model: UserModel | None = None  # --user-model-endpoint: an LLM plays the user

    @property
    def scenario(self) -> Scenario:
        return self.plan.scenario

    @property
    def trial_timeout(self) -> float:
        budget = self.time_budget
        return self.scenario.budgets.trial_timeout if budget is None else budget


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
    trial_timeout: float | None = None,
    request_limit: int = DEFAULT_REQUEST_LIMIT,
    user_model: UserModel | None = None,
) -> TrialRecord:
    """One trial. ``trial_timeout`` (``--trial-timeout``) replaces the scenario's trial timeout
    for real-clock agents, longer or shorter; a virtual clock keeps the scenario's.
    ``request_limit`` (``--max-request-size``): bytes of one request body to its servers.
    ``user_model`` (``--user-model-endpoint``): an LLM plays a conversational scenario's user."""
    scenario = plan.scenario
    started_at = datetime.now(UTC)
    t0 = time.perf_counter()
    trial = _new_trial(plan, model, clock_mode, run_seed)
    if trial_timeout is not None and clock_mode == "real":
        trial.time_budget = trial_timeout
    state = trial.state
    state.request_limit = request_limit
    trial.user_model = user_model
    try:
        plugins = instantiate(plan.cell)
        # Built once per (scenario, world seed), copied per trial.
        template = world_template(
            scenario, trial.world_seed, lambda: _build_world(scenario, trial.world_seed)
        )
        with template.world(trial.clock, trial.world_seed) as world:
            episode = await _setup(trial, world, plugins, template.givens(), template.instruction)
            try:
                agent_error = await _run_agent(trial, agent, episode, wall_timeout)
            finally:
                if isinstance(episode.user, UserSession):
                    await episode.user.close()
            verdict = judge(
                scenario,
                world,
                state,
                trial.output,
                agent_error,
                raw_output=trial.raw,
                plugins=plugins,
                initial=template.tables,
            )
    except HarnessStop:
        raise  # no outcome at all: the run stops and --resume runs the trial again
    except HarnessError as exc:
        state.harness_errors.append(exc)
        verdict = judge(scenario, None, state, None, exc)  # type: ignore[arg-type]
    except Exception as exc:  # a bug in chaoseval itself: not the agent's failure
        if (stop := stop_in(exc)) is not None:
            raise stop from exc
        err = HarnessError(f"internal error: {type(exc).__name__}: {exc}")
        state.harness_errors.append(err)
        verdict = judge(scenario, None, state, None, err)  # type: ignore[arg-type]
    return _record(trial, verdict, agent_name, run_id, clock_mode, started_at, t0)


def _new_trial(
    plan: TrialPlan, model: ModelSettings, clock_mode: ClockMode, run_seed: int
) -> _Trial:
    return _Trial(
        plan=plan,
        run_seed=run_seed,
        seed=trial_seed(run_seed, plan),
        world_seed=world_seed(run_seed, plan.scenario),
        clock=(VirtualClock if clock_mode == "virtual" else RealClock)(plan.scenario.start_time),
        state=TrialState(),
        settings=model,
    )


def record_unfinished(
    plan: TrialPlan,
    error: BaseException,
    *,
    agent_name: str,
    model: ModelSettings,
    clock_mode: ClockMode,
    run_id: str,
    run_seed: int,
    started_at: datetime,
    wall_seconds: float,
) -> TrialRecord:
    """The record of a trial lost with its worker process (killed past its timeout, or the
    agent crashed it): judged on ``error`` alone, its trajectory empty (never half a run)."""
    trial = _new_trial(plan, model, clock_mode, run_seed)
    verdict = judge(plan.scenario, None, trial.state, None, error)  # type: ignore[arg-type]
    record = _record(trial, verdict, agent_name, run_id, clock_mode, started_at, 0.0)
    record.wall_seconds = round6(wall_seconds)
    return record


def _build_world(scenario: Scenario, wseed: int) -> tuple[Tables, Givens, str]:
    """The world's initial tables and givens, and the instruction rendered from them."""
    try:
        tables, givens = scenario.build(wseed)
        return tables, givens, scenario.render_instruction(givens)
    except Exception as exc:
        raise ScenarioError(
            f"building the world failed: {type(exc).__name__}: {exc}",
            source=scenario.source or scenario.id,
        ) from exc


async def _setup(
    trial: _Trial,
    world: World,
    plugins: list[Perturbation[Any]],
    givens: Givens,
    instruction: str,
) -> Episode:
    """The perturbed channels: model, memory and clock once now, tools and UI per call."""
    scenario, state, clock, plan = trial.scenario, trial.state, trial.clock, trial.plan
    pending: dict[str, list[int]] = {}

    def make_ctx(plugin: Perturbation[Any], call: Any) -> PerturbationContext:
        # Setup-channel calls have no index (and a memory list's .index is a method).
        index = call.index if isinstance(call, ObservationCall | UserCall) else 0
        ctx = PerturbationContext(
            run_seed=trial.run_seed,
            scenario=scenario.id,
            trial=plan.index,
            perturbation=plugin.label,
            clock=clock,
            world=world,
            record=state.record_fault,
            call_index=index,
            rng=ctx_stream(trial.run_seed, scenario.id, plugin.label, plan.index, index),
            definition=scenario,
        )
        if plugin.channel in SETUP_CHANNELS:
            ctx.fired = pending.setdefault(plugin.channel, [])
        return ctx

    async def identity(call: Any) -> Any:
        return call

    channels = {p.channel for p in plugins}

    async def setup(channel: Channel, value: Any) -> Any:
        if channel not in channels:
            return value  # no plugin on the channel: the chain would be the identity
        return await build_chain(channel, plugins, identity, make_ctx)(value)

    # Scalars only: a shallow copy is a deep one (and pydantic's deepcopy costs ~20 us).
    trial.settings = shallow_copy(trial.settings)
    memory = scenario.remembered(givens)
    if channels:  # (three coroutines not made per trial when nothing perturbs setup)
        trial.settings = await setup("model", trial.settings)
        memory = await setup("memory", memory)
        await setup("clock", clock)

    def on_read(channel: str) -> None:
        # A setup-channel fault is delivered when the agent first reads that channel.
        state.deliver(pending.pop(channel, []))

    world.on_read = on_read
    usage = Usage.empty()
    # What the wire channels (model channel, MCP, exec: agents) of this trial work with.
    link = TrialLink(
        plan.trial_id, scenario.id, plan.index, trial.run_seed, state, world, plugins, usage
    )
    return Episode(
        instruction=instruction,
        task=dict(givens),
        tools=ToolBox(scenario, world, state, plugins, trial.run_seed, plan.index),
        clock=clock,
        trial_seed=trial.seed,
        _model=trial.settings,
        _memory=memory,
        _on_read=on_read,
        _observe=(
            Observation(scenario, world, state, plugins, make_ctx, clock)
            if scenario.ui is not None
            else None
        ),
        reference=scenario.solution,
        difficulty=scenario.difficulty,
        usage=usage,
        link=link,
        user=_user(trial, givens, plugins, make_ctx),
    )


def _user(
    trial: _Trial,
    givens: Givens,
    plugins: list[Perturbation[Any]],
    make_ctx: Callable[[Perturbation[Any], Any], PerturbationContext],
) -> UserSession | None:
    """The conversational scenario's user, behind the user-channel plugins: the deterministic
    one, or with ``--user-model-endpoint`` an LLM (chaoseval.users.llm)."""
    scenario = trial.scenario
    if scenario.user is None:
        return None
    user = scenario.user.render(givens)
    sim = None
    if trial.user_model is not None:
        from chaoseval.users.llm import LLMUser  # the openai SDK only for runs that ask

        sim = LLMUser(user, trial.user_model, trial.user_model.client())
    return UserSession(user, trial.state, plugins, make_ctx, trial.clock, sim)


async def _run_agent(
    trial: _Trial, agent: AgentAdapter, episode: Episode, wall_timeout: float
) -> BaseException | None:
    """Run the agent under the wall and trial budgets; what it returned or raised."""
    clock = trial.clock
    agent_error: BaseException | None = None
    try:
        limit = WallLimit(wall_timeout)  # anyio.fail_after, without a loop timer per trial
        with limit, clock.deadline(trial.trial_timeout):
            trial.state.stop = limit.scope.cancel
            trial.raw = await agent.run(episode)
        if limit.expired and limit.scope.cancelled_caught:
            raise TimeoutError
        if limit.scope.cancel_called and trial.state.budget_exceeded:
            raise StepBudgetExceeded("the agent kept calling tools past its step budget")
        trial.output = _coerce(trial.raw)
    except HarnessStop:
        raise
    except HarnessError as exc:
        agent_error = exc
    except TimeoutError as exc:
        agent_error = (
            TimeoutError(
                f"trial exceeded its time budget ({trial.trial_timeout:g}s "
                f"{clock.mode} / {wall_timeout:g}s wall)"
            )
            if not str(exc)
            else exc
        )
    except Exception as exc:  # the agent crashed: its failure, recorded with the cause
        if (stop := stop_in(exc)) is not None:  # unless the disk under it was full
            raise stop from exc
        agent_error = exc
    except SystemExit as exc:  # sys.exit in an agent ends its trial, not the run
        agent_error = exc
    output = trial.output
    if output is not None:
        if not output.usage.model_calls:
            assign(output, usage=episode.usage)
        trial.state.trajectory.add_step(
            "answer", t=clock.monotonic(), data=answer_data(output.gave_up)
        )
    trial.sim_seconds = clock.monotonic()
    return agent_error


# TrialRecord(**fields) by its validator through a TypeAdapter made once: the same record,
# without the model's __init__ around the validator (1.3 us of a trivial trial's ~85 us).
_new_record = TypeAdapter(TrialRecord).validate_python


def _record(
    trial: _Trial,
    verdict: Verdict,
    agent_name: str,
    run_id: str,
    clock_mode: ClockMode,
    started_at: datetime,
    t0: float,
) -> TrialRecord:
    scenario, plan, state, output = trial.scenario, trial.plan, trial.state, trial.output
    return _new_record(
        {
            "run_id": run_id,
            "trial_id": plan.trial_id,
            "scenario": scenario.id,
            "scenario_tags": scenario.tags,
            "cell": plan.cell.name,
            "perturbations": plan.cell.perturbations,
            "index": plan.index,
            "seed": trial.seed,
            "world_seed": trial.world_seed,
            "agent": agent_name,
            "model": trial.settings,
            "tool_versions": {t.name: t.version for t in scenario.tools},
            "status": verdict.status,
            "root_cause": verdict.root_cause,
            "error": verdict.error,
            "checks": verdict.checks,
            "vetoes": verdict.vetoes,
            "contracts": verdict.contracts,
            "answer": output.answer if output else None,
            "trajectory": state.trajectory,
            "steps": len(state.trajectory.tool_steps()),
            "usage": output.usage if output else state_usage(state),
            "clock": clock_mode,
            "sim_seconds": round6(trial.sim_seconds),
            "wall_seconds": round6(time.perf_counter() - t0),
            "started_at": started_at,
            "channel_overhead": (
                None if state.channel_overhead is None else round6(state.channel_overhead)
            ),
            "injection_followed": verdict.injection_followed,
            "utility": verdict.utility,
        }
    )


def state_usage(state: TrialState) -> Usage:
    """What the model calls recorded in the trajectory cost, when the agent returned nothing."""
    calls = [s.data for s in state.trajectory.steps if isinstance(s.data, ModelCallData)]
    return Usage(
        model_calls=len(calls),
        input_tokens=sum(c.input_tokens for c in calls),
        output_tokens=sum(c.output_tokens for c in calls),
        cost=sum(c.cost for c in calls),
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

"""The tool channel of one trial: policy, budgets, perturbations, then the scenario's tool.

Every call becomes a trajectory step with its result class and the faults that touched it.
Faults are marked delivered only when the call's outcome actually returns to the agent.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import Any, NamedTuple

import anyio
from pydantic import ValidationError

from chaoseval.channels.limits import (
    DEFAULT_REQUEST_LIMIT,
    BodyTooLarge,
    record_deep,
    record_oversized,
)
from chaoseval.engine.tooljson import (
    EXCERPT,
    _as_text,
    _brief,
    _checked_args,
    _dumps,
    _excerpt,
    _loads,
    _validate,
)
from chaoseval.errors import (
    AgentVisibleError,
    HarnessError,
    ScenarioError,
    ToolError,
    ToolTimeout,
)
from chaoseval.model.clock import frozen_at
from chaoseval.model.records import TrialRecord, Veto
from chaoseval.model.scenario import Scenario, ToolDescription, ToolSpec
from chaoseval.model.trajectory import ModelCallData, Trajectory, assign, tool_step
from chaoseval.model.world import World
from chaoseval.seams.perturbation import (
    PerturbationContext,
    ToolCall,
    build_chain,
    ctx_stream,
    service_moment,
)

# Set by a wire channel around its calls: their faults are collected here, not delivered, and the
# channel delivers them once the outcome's bytes are written (or the client gave up a hang).
_HELD: ContextVar[list[int] | None] = ContextVar("chaoseval_held_faults", default=None)


class held_faults:  # lower case: used as the function it was, ``with held_faults() as held``
    """Hold the delivery of the faults of the ToolBox calls made in the block (their ids).
    A class: every wire tool call enters one, and a generator's context manager costs
    several times as much."""

    __slots__ = ("_held", "_token")

    def __enter__(self) -> list[int]:
        self._held: list[int] = []
        self._token = _HELD.set(self._held)
        return self._held

    def __exit__(self, *exc: object) -> None:
        _HELD.reset(self._token)


class StepBudgetExceeded(AgentVisibleError):
    """The agent used more tool calls than the scenario allows."""

    kind = "budget_exceeded"


class Received(NamedTuple):
    """Text that reached the agent (a tool's result, an observed page) and what the agent
    itself sent to get it (a tool call's arguments, or their text): an id the result only
    echoes back is not something it learned. (A named tuple: made on every tool call, at a
    third of a frozen dataclass's cost.)"""

    text: str
    sent: Any = ""

    @property
    def echo(self) -> str:
        """What the agent sent, as text: written when the judge asks, not on every call."""
        return _as_text(self.sent)


# ``Received(text, sent)`` without the named tuple's Python ``__new__`` frame (a tool call's
# received text is made on every call): the same tuple of the same class.
_received: Callable[[tuple[str, Any]], Received] = functools.partial(tuple.__new__, Received)


class TrialState:
    """Mutable bookkeeping shared by the channels of one trial."""

    def __init__(self) -> None:
        self.trajectory = Trajectory.empty()
        self.harness_errors: list[HarnessError] = []
        self.vetoes: list[Veto] = []
        self.budget_exceeded = False
        self.turn = 0
        # In full, not the trajectory's excerpts: the judge asks whether a cited id was ever
        # shown to the agent (chaoseval.engine.judge.find_hallucinations).
        self.received: list[Received] = []
        # Ends the agent's run (the trial sets it): called when the agent calls a tool again
        # after being told its step budget is spent, so a retry loop cannot spin forever.
        self.stop: Callable[[], None] | None = None
        # Seconds spent inside chaoseval's wire channels that were neither the upstream's nor
        # an injected delay: None while no wire channel served the trial (in-process agents).
        self.channel_overhead: float | None = None
        # Bytes of one request body the trial's servers accept (--max-request-size).
        self.request_limit = DEFAULT_REQUEST_LIMIT

    def add_overhead(self, seconds: float) -> None:
        """A wire channel's own share of one exchange (never negative: timers are not exact)."""
        self.channel_overhead = (self.channel_overhead or 0.0) + max(0.0, seconds)

    def record_fault(self, fault: Any) -> int:
        return self.trajectory.add_fault(fault)

    def deliver(self, fault_ids: list[int]) -> None:
        for i in fault_ids:
            self.trajectory.faults[i].delivered = True


class ToolBox:
    """The in-process ToolChannel, what ``episode.tools`` is:
    ``await tools.call("lookup_order", order_id="A-1")``."""

    def __init__(
        self,
        scenario: Scenario,
        world: World,
        state: TrialState,
        plugins: list[Any],
        run_seed: int,
        trial: int,
    ):
        self._scenario = scenario
        self._world = world
        self._state = state
        self._plugins = plugins
        self._run_seed = run_seed
        self._trial = trial
        self._count = 0
        self.specs: dict[str, ToolSpec] = {t.name: t for t in scenario.tools}
        # With no tool-channel plugin, what the agent gets is exactly what ``_run`` returned,
        # so the JSON text ``_run`` made of it serves the excerpt, the judge, the result check
        # and a wire channel's answer too (one encoding per call, not five).
        self._plain = not plugins or not any(p.channel == "tool" for p in plugins)
        # Wall seconds inside ``call`` (the tool and its injected faults): a wire channel
        # subtracts them from its handler's time to find its own overhead.
        self.busy_seconds = 0.0
        self.listings = 0  # tool listings served so far, over any wire (engine.listing)
        # A wire channel's own time for one request (TrialRecord.channel_overhead): the
        # state's method itself, one frame less on every request.
        self.add_overhead: Callable[[float], None] = state.add_overhead

    def describe(self) -> list[ToolDescription]:
        return [t.describe() for t in self._scenario.tools]

    def note_model_call(self, input_tokens: int, output_tokens: int, cost: float) -> None:
        self._state.turn += 1
        self._state.trajectory.add_step(
            "model",
            t=self._world.clock.monotonic(),
            data=ModelCallData(input_tokens=input_tokens, output_tokens=output_tokens, cost=cost),
        )

    @property
    def plugins(self) -> list[Any]:
        """The trial's perturbation plugins (a wire channel asks them about its own requests)."""
        return self._plugins

    @property
    def turn(self) -> int:
        return self._state.turn

    def plugin_context(
        self,
        plugin: Any,
        index: int,
        *,
        step: int | None = None,
        spec: ToolSpec | None = None,
        purpose: str | None = None,
    ) -> PerturbationContext:
        """What ``plugin`` may see at this trial's ``index``-th call. ``purpose`` keys a separate
        random stream for requests that are not tool calls (an MCP ``tools/list``), so they never
        shift the draws of the calls themselves."""
        label = plugin.label if purpose is None else f"{plugin.label}:{purpose}"
        return PerturbationContext(
            run_seed=self._run_seed,
            scenario=self._scenario.id,
            trial=self._trial,
            perturbation=plugin.label,
            clock=self._world.clock,
            world=self._world,
            record=self._state.record_fault,
            call_index=index,
            step=step,
            rng=ctx_stream(self._run_seed, self._scenario.id, label, self._trial, index),
            spec=spec,
            definition=self._scenario,
        )

    def deliver(self, fault_ids: list[int]) -> None:
        """Mark faults delivered: a wire channel calls this when their bytes are written."""
        self._state.deliver(fault_ids)

    @property
    def request_limit(self) -> int:
        """Bytes of one request body the trial's tool servers accept."""
        return self._state.request_limit

    def note_oversized(self, channel: str, path: str, error: BodyTooLarge) -> None:
        """The agent sent a request body over the limit: a step of its trial."""
        record_oversized(self._state, self._world.clock, channel, path, error)

    def note_deep(self, channel: str, path: str) -> None:
        """The agent sent a request body nested too deep to take: a step of its trial."""
        record_deep(self._state, self._world.clock, channel, path)

    async def call(self, name: str, /, **args: Any) -> Any:
        return (await self.call_json(name, args))[0]

    async def call_json(self, name: str, args: dict[str, Any]) -> tuple[Any, str | None]:
        """``call(name, **args)`` for a wire channel, and the result's ``json.dumps`` when the
        ToolBox made it (its own tool's answer, no plugin in between; None otherwise), so the
        channel writes its answer from that text (tooljson.utf8_json), not a new encoding.
        (One coroutine, the call itself inside its busy_seconds timer: every call runs it.)"""
        started = time.perf_counter()
        try:
            state, clock = self._state, self._world.clock
            t = clock.monotonic()
            # This call's step: added now, or, on the plain path, made whole when the call ends;
            # nothing awaits before either, so no other step can come between (index ``at``).
            at = len(state.trajectory.steps)
            state.turn += 1
            index = self._count
            self._count += 1

            # Every tool call adds one tool step (this is the trial's only ToolBox): the count is
            # the number of tool steps, without rescanning the trajectory on every call
            # (quadratic in a long trial).
            if self._count > self._scenario.budgets.max_steps:
                step = state.trajectory.add_step("tool", t=t, tool=name, args=args)
                if state.budget_exceeded and state.stop is not None:
                    state.stop()  # told once already: the trial ends
                state.budget_exceeded = True
                step.result_class = "tool_error"
                step.error = (
                    f"step budget of {self._scenario.budgets.max_steps} tool calls exceeded"
                )
                # Yield: a loop of calls that awaits nothing else must not starve the event loop
                # (and the deadlines on it); a stopped agent's task is cancelled here.
                await anyio.lowlevel.checkpoint()
                raise StepBudgetExceeded(step.error)
            spec = self.specs.get(name)
            if spec is None:
                # The agent's error, not a fault target: no perturbation sees the call, so nothing
                # is injected into it, delivered through it or blamed on it. The call still takes
                # its index, so the draws of the calls after it are the same in every cell.
                step = state.trajectory.add_step("tool", t=t, tool=name, args=args)
                error = ToolError(f"no tool named {name!r}; tools: {', '.join(sorted(self.specs))}")
                self._finish(step, (), clock.monotonic(), error.kind, error=str(error))
                raise error
            if not self._scenario.allowed(name):
                state.vetoes.append(
                    Veto(kind="safety", detail=f"called forbidden tool {name!r}", step=at)
                )
            if self._plain:
                return self._call_plain(name, args, spec, t, at)
            return await self._call_chain(name, args, spec, index, t)
        finally:
            self.busy_seconds += time.perf_counter() - started

    def _call_plain(
        self, name: str, args: dict[str, Any], spec: ToolSpec, t: float, at: int
    ) -> tuple[Any, str | None]:
        """No tool-channel plugin: the call is _run itself, synchronous (tool bodies are).
        Nothing in it awaits, so a deadline around it could never fire (a virtual clock's
        needs a sleep, a real one's cancel scope an await): none; no fault can fire either.
        Its step is made once, whole, as the chain path's ends up (tests/engine)."""
        state = self._state
        try:
            result, known = self._run(name, args, at)
        except AgentVisibleError as exc:
            timeout = isinstance(exc, TimeoutError)
            self._plain_step(at, t, name, args, "timeout" if timeout else exc.kind, str(exc))
            if timeout:
                raise exc from None
            raise
        except HarnessError as exc:
            state.harness_errors.append(exc)
            self._plain_step(at, t, name, args, "harness_error", str(exc))
            raise
        # (No declared result model, the common case: valid without the call.)
        valid = spec.returns is None or self._valid(spec, result, known)
        excerpt = result if len(known) <= EXCERPT else _excerpt(result, known)
        self._plain_step(at, t, name, args, "ok" if valid else "malformed", None, excerpt)
        state.received.append(_received((known, args)))
        return result, None if isinstance(result, str) else known

    def _plain_step(
        self,
        at: int,
        t: float,
        name: str,
        args: dict[str, Any],
        result_class: str,
        error: str | None,
        result: Any = None,
    ) -> None:
        latency = self._world.clock.monotonic() - t
        steps = self._state.trajectory.steps
        steps.append(tool_step(at, t, name, args, result_class, result, error, latency))

    async def _call_chain(
        self, name: str, args: dict[str, Any], spec: ToolSpec, index: int, t: float
    ) -> tuple[Any, str | None]:
        """The call through the trial's tool-channel plugins, then ``_run``."""
        state, clock = self._state, self._world.clock
        step = state.trajectory.add_step("tool", t=t, tool=name, args=args)
        contexts: list[PerturbationContext] = []
        started = clock.monotonic()
        try:
            call = ToolCall(tool=name, args=args, index=index, turn=state.turn, step=step.index)

            def make_ctx(plugin: Any, c: Any) -> PerturbationContext:
                ctx = self.plugin_context(plugin, index, step=step.index, spec=spec)
                contexts.append(ctx)
                return ctx

            chain = build_chain("tool", self._plugins, self._base, make_ctx)
            with clock.deadline(self._scenario.budgets.call_timeout):
                result = await chain(call)
        except TimeoutError as exc:
            err = (
                exc
                if isinstance(exc, ToolTimeout)
                else ToolTimeout(
                    f"{name} did not answer within {self._scenario.budgets.call_timeout:g}s"
                )
            )
            self._finish(step, contexts, started, "timeout", error=str(err))
            raise err from None
        except AgentVisibleError as exc:
            self._finish(step, contexts, started, exc.kind, error=str(exc))
            raise
        except HarnessError as exc:
            state.harness_errors.append(exc)
            self._finish(step, contexts, started, "harness_error", error=str(exc), deliver=False)
            raise
        # A plugin's result: _as_text falls back to str() and repr(), which must not let a
        # non-JSON result pass the result check, so it is checked as the object it is.
        text = _as_text(result)
        result_class = "ok" if self._valid(spec, result, None) else "malformed"
        self._finish(step, contexts, started, result_class, result=result, text=text)
        state.received.append(Received(text, args))
        return result, None

    def _finish(
        self,
        step: Any,
        contexts: list[PerturbationContext] | tuple[()],
        started: float,
        result_class: str,
        *,
        result: Any = None,
        text: str | None = None,
        error: str | None = None,
        deliver: bool = True,
    ) -> None:
        fired = [i for c in contexts for i in c.fired] if contexts else []
        assign(
            step,
            faults=fired,
            result_class=result_class,
            error=error,
            latency=self._world.clock.monotonic() - started,
            result=_excerpt(result, text),
        )
        held = _HELD.get()
        if deliver and held is not None:
            held.extend(fired)  # a wire channel delivers them when it writes the outcome
        elif deliver:
            self._state.deliver(fired)

    @staticmethod
    def _valid(spec: ToolSpec | None, result: Any, text: str | None) -> bool:
        if spec is None or spec.returns is None:
            return True
        try:
            _validate(spec.returns, result, text)
        except (ValidationError, TypeError, ValueError):
            return False
        return True

    async def _base(self, call: ToolCall) -> Any:
        """The plugin chain's innermost handler: the scenario's tool (``_run``)."""
        return self._run(call.tool, call.args, call.step)[0]

    def _run(self, name: str, args: dict[str, Any], step: int) -> tuple[Any, str]:
        """Run the scenario's tool: argument validation, then the body, on the world. Its
        result (a JSON copy) and that copy's text as ``_as_text`` has it."""
        spec = self.specs[name]  # call() answers unknown tools before any perturbation
        service_moment()  # a plugin acting when the service takes the call (drift's clock)
        try:
            args = _checked_args(spec.params)(args)
        except ValidationError as exc:
            raise ToolError(f"invalid arguments for {name}: {_brief(exc)}") from None
        world = self._world
        world.current_tool = name
        frozen = frozen_at(world.now()) if self._scenario.freeze_time else None
        writes_before = len(world.writes)
        try:
            if frozen is None:
                result = spec.fn(world, **args)
            else:  # tool bodies are synchronous: nothing else runs while the patch is active
                with frozen:
                    result = spec.fn(world, **args)
        except AgentVisibleError:
            raise
        except Exception as exc:
            raise ScenarioError(
                f"tool {name!r} raised {type(exc).__name__}: {exc}",
                source=self._scenario.source or self._scenario.id,
            ) from exc
        finally:
            world.current_tool = None
        for w in world.writes[writes_before:] if len(world.writes) > writes_before else ():
            if w.table in self._scenario.policy.forbidden_writes:
                self._state.vetoes.append(
                    Veto(
                        kind="safety",
                        detail=f"{name} wrote to forbidden table {w.table!r}",
                        step=step,
                    )
                )
        try:
            text = _dumps(result)
        except (TypeError, ValueError) as exc:
            raise ScenarioError(f"tool {name!r} returned non-JSON data: {exc}") from exc
        # A copy, so the agent can never mutate the world through a returned object.
        copied = _loads(text)
        return copied, copied if isinstance(copied, str) else text  # as _as_text has it


class UnknownTools:
    """Tallies, record by record, the trials that called tools their scenario lacks (the
    agent's error, never a fault target); a run's ``on_record``, so nothing is kept."""

    def __init__(self, scenarios: Iterable[Scenario]) -> None:
        self.tools = {s.id: {t.name for t in s.tools} for s in scenarios}
        self.total = self.hit = 0
        self.called: Counter[str] = Counter()

    def __call__(self, record: TrialRecord) -> None:
        self.total += 1
        known = self.tools.get(record.scenario)
        if known is None:
            return
        missing = {st.tool for st in record.trajectory.tool_steps() if st.tool not in known}
        missing.discard(None)
        self.hit += bool(missing)
        self.called.update(str(name) for name in missing)

    def note(self) -> str | None:
        """One line when most trials called such tools: usually an agent written for other
        scenarios, whose numbers then mislead."""
        if not self.total or self.hit * 2 <= self.total:
            return None
        top = ", ".join(f"{name} ({n})" for name, n in self.called.most_common(3))
        return (
            f"{self.hit} of {self.total} trials called tools their scenario does not have "
            f"({top}): the agent's own errors, never fault targets; is the agent meant for "
            "these scenarios?"
        )


def unknown_tool_note(records: Iterable[TrialRecord], scenarios: Iterable[Scenario]) -> str | None:
    tally = UnknownTools(scenarios)
    for r in records:
        tally(r)
    return tally.note()

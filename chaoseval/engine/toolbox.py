"""The tool channel of one trial: policy, budgets, perturbations, then the scenario's tool.

Every call becomes a trajectory step with its result class and the faults that touched it.
Faults are marked delivered only when the call's outcome actually returns to the agent.
"""

from __future__ import annotations

import functools
import json
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any, NamedTuple

import anyio
from pydantic import BaseModel, ValidationError

from chaoseval import redact
from chaoseval.channels.limits import DEFAULT_REQUEST_LIMIT, BodyTooLarge, record_oversized
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
from chaoseval.model.trajectory import ModelCallData, Trajectory, assign
from chaoseval.model.world import World
from chaoseval.seams.perturbation import (
    PerturbationContext,
    ToolCall,
    build_chain,
    ctx_stream,
    service_moment,
)

EXCERPT = 2000


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
    """Text that reached the agent (a tool's result, an observed page) and the text the agent
    itself sent to get it: an id the result only echoes back is not something it learned.
    (A named tuple: made on every tool call, at a third of a frozen dataclass's cost.)"""

    text: str
    echo: str = ""


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
        # With no tool-channel plugin, what the agent gets is exactly what ``_base`` returned,
        # so the JSON text ``_base`` made of it serves the excerpt, the judge and the result
        # check too (one encoding per call, not four).
        self._plain = not plugins or not any(p.channel == "tool" for p in plugins)
        self._last: tuple[Any, str] | None = None
        # Wall seconds inside ``call`` (the tool and its injected faults): a wire channel
        # subtracts them from its handler's time to find its own overhead.
        self.busy_seconds = 0.0
        self.listings = 0  # tool listings served so far, over any wire (engine.listing)

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

    def add_overhead(self, seconds: float) -> None:
        """A wire channel's own time for one request (TrialRecord.channel_overhead)."""
        self._state.add_overhead(seconds)

    @property
    def request_limit(self) -> int:
        """Bytes of one request body the trial's tool servers accept."""
        return self._state.request_limit

    def note_oversized(self, channel: str, path: str, error: BodyTooLarge) -> None:
        """The agent sent a request body over the limit: a step of its trial."""
        record_oversized(self._state, self._world.clock, channel, path, error)

    async def call(self, name: str, /, **args: Any) -> Any:
        started = time.perf_counter()
        try:
            return await self._call(name, args)
        finally:
            self.busy_seconds += time.perf_counter() - started

    async def _call(self, name: str, args: dict[str, Any]) -> Any:
        state, world = self._state, self._world
        clock = world.clock
        step = state.trajectory.add_step("tool", t=clock.monotonic(), tool=name, args=args)
        state.turn += 1
        index = self._count
        self._count += 1

        # Every tool step of the trial is added above, one per call (this is the trial's only
        # ToolBox): the count is the number of tool steps, without rescanning the trajectory
        # on every call (quadratic in a long trial).
        if self._count > self._scenario.budgets.max_steps:
            if state.budget_exceeded and state.stop is not None:
                state.stop()  # told once already: the trial ends
            state.budget_exceeded = True
            step.result_class = "tool_error"
            step.error = f"step budget of {self._scenario.budgets.max_steps} tool calls exceeded"
            # Yield: a loop of calls that awaits nothing else must not starve the event loop
            # (and the deadlines on it); a stopped agent's task is cancelled here.
            await anyio.lowlevel.checkpoint()
            raise StepBudgetExceeded(step.error)
        if name not in self.specs:
            # The agent's error, not a fault target: no perturbation sees the call, so nothing
            # is injected into it, delivered through it or blamed on it. The call still takes
            # its index, so the draws of the calls after it are the same in every cell.
            error = ToolError(f"no tool named {name!r}; tools: {', '.join(sorted(self.specs))}")
            self._finish(step, [], clock.monotonic(), error.kind, error=str(error))
            raise error
        if not self._scenario.allowed(name):
            state.vetoes.append(
                Veto(kind="safety", detail=f"called forbidden tool {name!r}", step=step.index)
            )

        call = ToolCall(tool=name, args=args, index=index, turn=state.turn, step=step.index)
        contexts: list[PerturbationContext] = []

        def make_ctx(plugin: Any, c: Any) -> PerturbationContext:
            ctx = self.plugin_context(plugin, index, step=step.index, spec=self.specs.get(name))
            contexts.append(ctx)
            return ctx

        # No tool-channel plugin: the chain is _base itself.
        plugins = self._plugins
        chain = self._base if self._plain else build_chain("tool", plugins, self._base, make_ctx)
        started = clock.monotonic()
        try:
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
        last, self._last = self._last, None
        # Only _base's own text is known to be plain JSON (_as_text falls back to str() and
        # repr(), which must not let a plugin's non-JSON result pass the result check).
        known = last[1] if self._plain and last is not None and last[0] is result else None
        text = _as_text(result) if known is None else known
        result_class = "ok" if self._valid(self.specs.get(name), result, known) else "malformed"
        self._finish(step, contexts, started, result_class, result=result, text=text)
        state.received.append(Received(text, _as_text(args)))
        return result

    def _finish(
        self,
        step: Any,
        contexts: list[PerturbationContext],
        started: float,
        result_class: str,
        *,
        result: Any = None,
        text: str | None = None,
        error: str | None = None,
        deliver: bool = True,
    ) -> None:
        fired = [i for c in contexts for i in c.fired]
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
        """Run the scenario's tool: argument validation, then the body, on the world."""
        spec = self.specs[call.tool]  # call() answers unknown tools before any perturbation
        service_moment()  # a plugin acting when the service takes the call (drift's clock)
        try:
            args = _checked_args(spec.params)(call.args)
        except ValidationError as exc:
            raise ToolError(f"invalid arguments for {call.tool}: {_brief(exc)}") from None
        world = self._world
        world.current_tool = call.tool
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
                f"tool {call.tool!r} raised {type(exc).__name__}: {exc}",
                source=self._scenario.source or self._scenario.id,
            ) from exc
        finally:
            world.current_tool = None
        for w in world.writes[writes_before:] if len(world.writes) > writes_before else ():
            if w.table in self._scenario.policy.forbidden_writes:
                self._state.vetoes.append(
                    Veto(
                        kind="safety",
                        detail=f"{call.tool} wrote to forbidden table {w.table!r}",
                        step=call.step,
                    )
                )
        try:
            text = _dumps(result)
        except (TypeError, ValueError) as exc:
            raise ScenarioError(f"tool {call.tool!r} returned non-JSON data: {exc}") from exc
        # A copy, so the agent can never mutate the world through a returned object.
        copied = _loads(text)
        self._last = (copied, copied if isinstance(copied, str) else text)  # as _as_text has it
        return copied


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


def _validate(model: type[BaseModel], result: Any, text: str | None = None) -> BaseModel:
    """``text``: ``result`` as JSON already (its default=str never fires on a JSON copy)."""
    if not isinstance(result, dict):
        raise TypeError(f"expected a JSON object, got {type(result).__name__}")
    # JSON mode: dates arrive as strings, as they would over the wire.
    return model.model_validate_json(json.dumps(result) if text is None else text, strict=True)


@functools.lru_cache(maxsize=4096)  # one per tool's parameter model
def _checked_args(params: type[BaseModel]) -> Callable[[Any], dict[str, Any]]:
    """``lambda args: params.model_validate(args).model_dump()``, calling pydantic-core's
    validator and serializer directly (the two methods' Python wrappers were a third of the
    time) unless the model overrides either method."""
    own_validate = params.model_validate.__func__  # type: ignore[attr-defined]
    if params.model_dump is not BaseModel.model_dump or own_validate is not _MODEL_VALIDATE:
        return lambda args: params.model_validate(args).model_dump()
    validate = params.__pydantic_validator__.validate_python
    dump = params.__pydantic_serializer__.to_python
    return lambda args: dump(validate(args))


_MODEL_VALIDATE = BaseModel.model_validate.__func__  # type: ignore[attr-defined]


def validate_result(spec: ToolSpec, result: Any) -> Any:
    """Raise ValueError when ``result`` does not match the tool's declared result model."""
    if spec.returns is None:
        return result
    try:
        _validate(spec.returns, result)
    except (ValidationError, TypeError) as exc:
        raise ValueError(f"{spec.name} returned malformed data: {_brief(exc)}") from None
    return result


def _brief(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        text = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()
        )
        return redact.head(text, 300)
    return redact.head(str(exc), 300)


# json.dumps(value, default=str) builds a new encoder per call; this one is made once.
_TEXT = json.JSONEncoder(default=str)
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _dumps(value: Any) -> str:
    """``_TEXT.encode(value)``: the same C encoder, without the Python frames around it
    (``encode``, ``iterencode``, a closure per call): twice as fast on a small result."""
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if c_make_encoder is None:  # pragma: no cover - CPython always has it
        return _TEXT.encode(value)
    # Fresh markers per call, as iterencode makes them: a failed encoding may leave some.
    encode = c_make_encoder({}, str, encode_basestring_ascii, None, ": ", ", ", False, False, True)
    return "".join(encode(value, 0))


def _loads(text: str) -> Any:
    """``json.loads(text)`` for text :func:`_dumps` wrote (no surrounding white space): the
    scanner alone, without loads' checks (a tenth of its time on a small result)."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        end = -1
    return value if end == len(text) else json.loads(text)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return _dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _excerpt(result: Any, text: str | None = None) -> Any:
    text = _as_text(result) if text is None else text
    if len(text) <= EXCERPT:
        return result
    return redact.head(text, EXCERPT) + f"...[{len(text)} chars]"  # redacted, then cut

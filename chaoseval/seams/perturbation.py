"""The perturbation seam: middleware ``(call, call_next, ctx)`` around one channel.

Channels: ``tool`` and ``observation`` pass through the middleware on every call; ``model``,
``memory`` and ``clock`` pass through once when the trial starts (the call is the trial's
model settings, memory list or clock). Plugins subclass :class:`Perturbation`, declare a
``Params`` model and register with ``@perturbation("name")``; third-party packages expose the
class through the ``chaoseval.perturbations`` entry-point group.

A plugin also owns the root causes its faults can give a failure: it lists them in
``root_causes`` and the judge asks its ``blame`` whether a delivered fault shaped the failure,
and its ``veto`` whether a delivered fault made the trial wrong whatever its checks say.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import random
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from chaoseval.errors import AgentVisibleError, ConfigError, HarnessError, PluginError
from chaoseval.model.clock import Clock
from chaoseval.model.records import AgentOutput, RootCause
from chaoseval.model.seeding import stream
from chaoseval.model.trajectory import Channel, Fault, Step, Trajectory
from chaoseval.seams.registry import Registry, qualified_name
from chaoseval.seams.rootcause import CORE, root_causes

CallNext = Callable[[Any], Awaitable[Any]]


@dataclass
class ToolCall:
    tool: str
    args: dict[str, Any]
    index: int  # this trial's n-th tool call (0-based)
    turn: int  # the agent's step count when it made the call
    step: int  # index of the trajectory step


@dataclass
class ObservationCall:
    page: str | None
    index: int
    turn: int
    step: int


class CommonParams(BaseModel):
    """Trigger and selection parameters every perturbation shares.

    ``probability`` is the per-call chance ("toxicity"), independent of the fault's own
    parameters. Deterministic triggers narrow which calls are eligible before it is drawn.
    """

    model_config = ConfigDict(extra="forbid")

    probability: float = Field(default=1.0, ge=0, le=1, description="per-call chance to fire")
    tools: list[str] = Field(default_factory=lambda: ["*"], description="tool-name globs")
    first_n: int | None = Field(
        default=None, ge=0, description="only the first N calls to the selected tools"
    )
    after_n: int | None = Field(
        default=None, ge=0, description="only calls to the selected tools after the first N"
    )
    on_turn: int | None = Field(default=None, ge=0, description="only the call at agent turn t")

    @field_validator("tools", mode="before")
    @classmethod
    def _one_glob(cls, v: Any) -> Any:
        return [g for g in v.split(";") if g] if isinstance(v, str) else v

    def triggered(self, index: int, turn: int) -> bool:
        """Whether the ``index``-th eligible event (a call, a listing) at agent turn ``turn``
        passes the deterministic triggers (``probability`` is drawn after)."""
        if self.first_n is not None and index >= self.first_n:
            return False
        if self.after_n is not None and index < self.after_n:
            return False
        return not (self.on_turn is not None and turn != self.on_turn)


P = TypeVar("P", bound=CommonParams)


@dataclass
class PerturbationContext:
    """What a plugin may see of the trial. Its randomness comes only from ``rng``."""

    run_seed: int
    scenario: str
    trial: int
    perturbation: str
    clock: Clock
    world: Any
    record: Callable[[Fault], int]
    call_index: int = 0
    step: int | None = None
    rng: random.Random = field(default_factory=random.Random)
    fired: list[int] = field(default_factory=list)
    # Tool channel only: the called tool's ToolSpec, so a plugin can shape payloads from the
    # tool's declared result model (``spec.returns``). None on the other channels.
    spec: Any = None
    # The running scenario itself (``scenario`` is its id): what it declares for plugins to
    # carry out, such as its drift points (``definition.drift``).
    definition: Any = None

    def fault(self, channel: Channel, kind: str, **detail: Any) -> Fault:
        """Log a fault in the trajectory; the harness marks it delivered when the agent gets it."""
        fault = Fault(
            perturbation=self.perturbation,
            channel=channel,
            kind=kind,
            detail=detail,
            call_index=self.call_index,
            step=self.step,
        )
        self.fired.append(self.record(fault))
        return fault


@dataclass(frozen=True, init=False)
class FailureContext:
    """What the judge shows a plugin when it asks whether the plugin's fault shaped a failure."""

    trajectory: Trajectory
    output: AgentOutput | None = None  # None when the agent raised or returned no answer
    error: BaseException | None = None  # what the agent raised, if it did
    world: Any = None  # the final World (the judge's; None when none was built)
    scenario: Any = None  # the trial's Scenario

    def __init__(
        self,
        trajectory: Trajectory,
        output: AgentOutput | None = None,
        error: BaseException | None = None,
        world: Any = None,
        scenario: Any = None,
    ):
        # As TrialLink's: the frozen instance's dict filled at once (every trial judges one).
        self.__dict__.update(
            trajectory=trajectory, output=output, error=error, world=world, scenario=scenario
        )

    def tool_steps_after(self, fault: Fault) -> list[Step]:
        """The tool calls the agent made after the step the fault affected."""
        return [s for s in self.trajectory.steps[(fault.step or 0) + 1 :] if s.kind == "tool"]

    def answer_text(self) -> str:
        """The answer and its structured data as one string (empty when there is no answer)."""
        if self.output is None:
            return ""
        return self.output.answer + json.dumps(self.output.data, default=str)


def _did_you_mean(error: Any, fields: list[str]) -> str:
    """' (did you mean 'probability'?)' for a misspelt parameter name."""
    if error["type"] != "extra_forbidden" or not error["loc"]:
        return ""
    close = difflib.get_close_matches(str(error["loc"][0]), fields, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_tool_globs(plugin: Perturbation[Any], cell: str, tools: Sequence[str]) -> None:
    """A tool plugin's ``tools`` globs must each select a tool the run's scenarios have: a
    misspelt name would otherwise run a cell whose faults never land, with exit 0."""
    globs = getattr(plugin.params, "tools", ["*"])
    if plugin.channel != "tool" or not tools:
        return
    for glob in globs:
        if not any(fnmatch.fnmatchcase(t, glob) for t in tools):
            close = difflib.get_close_matches(glob, tools, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigError(
                f"-p {cell}: tools={glob} selects no tool of the selected scenarios, so its "
                f"faults could never land; {hint}their tools: {', '.join(tools)}"
            )


class Perturbation(Generic[P]):
    """Base class for plugins: set ``channel``, a ``Params`` model, and implement ``apply``.

    A plugin whose faults explain a failure better than the failing check does lists those
    root causes in ``root_causes`` (its own, owned by its name, or core ones it reuses) and
    overrides ``blame``.
    """

    name: ClassVar[str] = "perturbation"
    channel: ClassVar[Channel] = "tool"
    Params: ClassVar[type[CommonParams]] = CommonParams
    models: ClassVar[str] = ""  # one line: what real-world failure this models
    root_causes: ClassVar[tuple[RootCause, ...]] = ()
    # Plugins of one family (one fault on several channels) share its causes, owned by it.
    family: ClassVar[str | None] = None
    # Adversarial content: a delivered fault plants an instruction, and ``veto`` says whether
    # the agent followed it (a safety veto; the trial records ``injection_followed``).
    adversarial: ClassVar[bool] = False

    def __init__(self, params: P | None = None, *, label: str | None = None):
        self.params: P = params if params is not None else self.Params()  # type: ignore[assignment]
        self.label = label or self.name

    @classmethod
    def from_spec(cls, params: dict[str, Any], label: str | None = None) -> Perturbation[Any]:
        try:
            return cls(cast(Any, cls.Params(**params)), label=label)
        except ValidationError as exc:
            fields = list(cls.Params.model_fields)
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}{_did_you_mean(e, fields)}"
                for e in exc.errors()
            )
            known = ", ".join(fields)
            raise ConfigError(
                f"perturbation {cls.name!r}: bad parameters ({problems}); parameters: {known}"
            ) from None

    def selects(self, call: Any, turn: int) -> bool:
        """Whether this call is eligible; counts calls per plugin so ``first_n`` means the first
        N calls *to the selected tools* (a plugin instance lives for one trial)."""
        p = self.params
        if isinstance(call, ToolCall) and not any(
            fnmatch.fnmatchcase(call.tool, g) for g in p.tools
        ):
            return False
        index = getattr(self, "_matched", 0)
        self._matched = index + 1
        return p.triggered(index, turn)

    async def __call__(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        turn = getattr(call, "turn", 0)
        # Each call has its own stream, so the gate draw and the fault's own draws (delays,
        # payloads) never depend on whether another plugin is stacked.
        if not self.selects(call, turn) or ctx.rng.random() >= self.params.probability:
            return await call_next(call)
        return await self.apply(call, call_next, ctx)

    async def apply(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        raise NotImplementedError

    @classmethod
    def applies_to(cls, scenario: Any) -> bool:
        """Whether this plugin can reach anything in ``scenario`` at all (search offers only
        those): a plugin that carries out what a scenario declares says so here."""
        return True

    @classmethod
    def missing(cls, scenario: Any) -> str | None:
        """What ``scenario`` lacks for this plugin to fire, said when lint's canary saw it
        never fire (``"memory 'order' is a mapping with no stale_fields"``); None: nothing
        the plugin can name (lint then says what any plugin needs: a call, tool or channel)."""
        return None

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        """The root cause (one of ``root_causes``) this delivered ``fault`` gave the failure,
        or None when it did not demonstrably shape it. Delivery alone is not enough, or any
        failure of a perturbed trial would be blamed on whatever fault reached the agent.
        The judge asks about the latest delivered fault first and takes the first answer."""
        return None

    def veto(self, fault: Fault, failure: FailureContext) -> tuple[RootCause, str] | None:
        """A cause (one of ``root_causes``) and what showed it when this delivered ``fault``
        made the trial wrong whatever its checks say; None (the default) otherwise. The judge
        asks about each delivered fault of the plugin, in the order they were logged. What a
        veto does depends on the plugin's ``adversarial``:

        - adversarial (the fault planted an instruction): the instruction was followed. A
          safety veto on the fault's step fails the trial whatever else went wrong, recorded
          as ``injection_followed`` beside ``utility`` (no veto: it was resisted);
        - otherwise: the trial went wrong where no check looks (drift: a write on data that
          changed after it was read). It fails a trial with an answer and no other veto, with
          this cause, even when every check passed.
        """
        return None


def validate(name: str, obj: object) -> type[Perturbation[Any]]:
    """A perturbation plugin as it registers: the class, its parameters, its root causes."""
    where = f"perturbation {name!r} ({qualified_name(obj)})"
    if not (isinstance(obj, type) and issubclass(obj, Perturbation)):
        raise ConfigError(f"{where} is not a subclass of chaoseval's Perturbation")
    if not (isinstance(obj.Params, type) and issubclass(obj.Params, CommonParams)):
        raise ConfigError(f"{where}: Params must subclass CommonParams")
    if obj.channel not in get_args(Channel):
        raise ConfigError(
            f"{where}: channel {obj.channel!r} is not one of {', '.join(get_args(Channel))}"
        )
    if obj.apply is Perturbation.apply and obj.__call__ is Perturbation.__call__:
        raise ConfigError(f"{where} implements neither apply nor __call__")
    if obj.adversarial and not obj.root_causes:
        raise ConfigError(f"{where} is adversarial: declare the cause a followed fault gets")
    for cause in obj.root_causes:
        if not isinstance(cause, RootCause):
            raise ConfigError(f"{where}: root_causes holds {cause!r}, not a RootCause")
        if cause.owner == CORE:
            root_causes.check(cause)  # reusing a core cause: exactly as the core declares it
        elif cause.owner not in (name, obj.name, obj.family):
            raise ConfigError(
                f"{where}: root cause {cause.name!r} is owned by {cause.owner!r}; a plugin "
                f"declares its own causes under its name ({name!r}) or reuses core ones"
            )
        else:
            root_causes.register(cause)
    return obj


registry: Registry[type[Perturbation[Any]]] = Registry(
    "perturbation", "chaoseval.perturbations", validate
)


def perturbation(name: str) -> Callable[[type[Perturbation[Any]]], type[Perturbation[Any]]]:
    """Register a perturbation class under ``name``."""

    def decorate(cls: type[Perturbation[Any]]) -> type[Perturbation[Any]]:
        cls.name = name
        return registry.register(name)(cls)

    return decorate


_AT_SERVICE: ContextVar[tuple[Callable[[], None], ...]] = ContextVar("at_service", default=())


@contextmanager
def at_service(fn: Callable[[], None]) -> Iterator[None]:
    """Run ``fn`` at the moment the service itself takes the call: when the tool starts on the
    world, after every plugin further down the chain (an injected latency, a retry) has spent
    its time. A plugin whose change depends on when the tool reads the world (drift's
    ``after_seconds``) acts there, whatever order the plugins are stacked in; ``fn`` may raise
    an agent-visible error in the service's place (drift's 409). Per task (a context
    variable), so concurrent calls of one trial never see each other's hooks."""
    token = _AT_SERVICE.set((*_AT_SERVICE.get(), fn))
    try:
        yield
    finally:
        _AT_SERVICE.reset(token)


def service_moment() -> None:
    """The tool is about to run on the world (the ToolBox's base, before anything else)."""
    for fn in _AT_SERVICE.get():
        fn()


def build_chain(
    channel: Channel,
    plugins: list[Perturbation[Any]],
    base: CallNext,
    make_ctx: Callable[[Perturbation[Any], Any], PerturbationContext],
) -> CallNext:
    """Compose the plugins of one channel around ``base``: first in the stack is outermost.

    Anything a plugin raises that is neither a fault meant for the agent, a timeout, nor
    something that came up from further down the chain is the plugin's own bug: PluginError.
    """
    handler = base
    for plugin in reversed([p for p in plugins if p.channel == channel]):
        handler = _wrap(plugin, handler, make_ctx)
    return handler


_DOWNSTREAM = "__chaoseval_downstream__"


def _wrap(
    plugin: Perturbation[Any],
    inner: CallNext,
    make_ctx: Callable[[Perturbation[Any], Any], PerturbationContext],
) -> CallNext:
    async def call_next(call: Any) -> Any:
        try:
            return await inner(call)
        except Exception as exc:
            # Tag rather than wrap, so a plugin can still catch ToolTimeout etc. from below.
            setattr(exc, _DOWNSTREAM, True)
            raise

    async def handler(call: Any) -> Any:
        ctx = make_ctx(plugin, call)
        try:
            return await plugin(call, call_next, ctx)
        except (AgentVisibleError, TimeoutError, HarnessError):
            raise
        except Exception as exc:
            if getattr(exc, _DOWNSTREAM, False):
                raise
            raise PluginError(plugin.label, exc) from exc

    return handler


def ctx_stream(
    run_seed: int, scenario: str, perturbation: str, trial: int, index: int
) -> random.Random:
    """The random stream for one plugin at one call of one trial."""
    return stream(run_seed, scenario, perturbation, trial, index)

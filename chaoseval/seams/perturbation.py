"""The perturbation seam: middleware ``(call, call_next, ctx)`` around one channel.

Channels: ``tool`` and ``observation`` pass through the middleware on every call; ``model``,
``memory`` and ``clock`` pass through once when the trial starts (the call is the trial's
model settings, memory list or clock). Plugins subclass :class:`Perturbation`, declare a
``Params`` model and register with ``@perturbation("name")``; third-party packages expose the
class through the ``chaoseval.perturbations`` entry-point group.
"""

from __future__ import annotations

import fnmatch
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from chaoseval.errors import AgentVisibleError, ConfigError, HarnessError, PluginError
from chaoseval.model.clock import Clock
from chaoseval.model.seeding import stream
from chaoseval.model.trajectory import Channel, Fault
from chaoseval.seams.registry import Registry

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


class Perturbation(Generic[P]):
    """Base class for plugins: set ``channel``, a ``Params`` model, and implement ``apply``."""

    name: ClassVar[str] = "perturbation"
    channel: ClassVar[Channel] = "tool"
    Params: ClassVar[type[CommonParams]] = CommonParams
    models: ClassVar[str] = ""  # one line: what real-world failure this models

    def __init__(self, params: P | None = None, *, label: str | None = None):
        self.params: P = params if params is not None else self.Params()  # type: ignore[assignment]
        self.label = label or self.name

    @classmethod
    def from_spec(cls, params: dict[str, Any], label: str | None = None) -> Perturbation[Any]:
        try:
            return cls(cls.Params(**params), label=label)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
            )
            known = ", ".join(cls.Params.model_fields)
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
        if p.first_n is not None and index >= p.first_n:
            return False
        if p.after_n is not None and index < p.after_n:
            return False
        return not (p.on_turn is not None and turn != p.on_turn)

    async def __call__(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        turn = getattr(call, "turn", 0)
        # Each call has its own stream, so the gate draw and the fault's own draws (delays,
        # payloads) never depend on whether another plugin is stacked.
        if not self.selects(call, turn) or ctx.rng.random() >= self.params.probability:
            return await call_next(call)
        return await self.apply(call, call_next, ctx)

    async def apply(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        raise NotImplementedError


registry: Registry[type[Perturbation[Any]]] = Registry("perturbation", "chaoseval.perturbations")


def perturbation(name: str) -> Callable[[type[Perturbation[Any]]], type[Perturbation[Any]]]:
    """Register a perturbation class under ``name``."""

    def decorate(cls: type[Perturbation[Any]]) -> type[Perturbation[Any]]:
        cls.name = name
        return registry.register(name)(cls)

    return decorate


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

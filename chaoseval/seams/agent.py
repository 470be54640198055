"""The agent seam: ``async run(episode) -> AgentOutput``, and the registry of agents.

An adapter is anything with that method (and optionally ``clock = "virtual"`` when it never
waits on wall-clock time, as the simulated reference agents do, and ``stop_grace``: the
seconds it may take to stop once its trial is cancelled, which the process and Ray executors
wait, beyond their own grace, before they kill its worker). Register a factory with
``@agent("name")`` or expose it through the ``chaoseval.agents`` entry-point group; on the
command line ``--agent name`` or ``--agent package.module:factory``, either followed by
parameters for the factory, as perturbations take them: ``--agent resilient:slips=false``.
"""

from __future__ import annotations

import difflib
import inspect
import random
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, cast, runtime_checkable

from chaoseval.errors import ConfigError
from chaoseval.model.cells import key_values, scalar
from chaoseval.model.clock import Clock
from chaoseval.model.records import AgentOutput, ModelSettings, Usage
from chaoseval.model.scenario import Givens, MemoryItem, ToolDescription, ToolSpec
from chaoseval.model.seeding import stream
from chaoseval.seams.registry import Registry, import_object

__all__ = [
    "AgentAdapter",
    "AgentOutput",  # lives in the data model; agents are used to importing it from here
    "Episode",
    "ToolChannel",
    "TrialLink",
    "UserChannel",
    "agent",
    "load_agent",
    "registry",
    "split_agent",
]


class ToolChannel(Protocol):
    """What ``episode.tools`` is: the engine's in-process ToolBox, or HttpTools when the same
    calls go over HTTP. Agents depend on this surface only, never on the engine."""

    @property
    def specs(self) -> Mapping[str, ToolSpec]:
        """The scenario's tools by name (argument and result models)."""
        ...

    def describe(self) -> list[ToolDescription]:
        """The function-calling descriptions (JSON schemas) an LLM agent would be given."""
        ...

    async def call(self, name: str, /, **args: Any) -> Any:
        """Call one tool; the result is JSON data, or an AgentVisibleError is raised."""
        ...

    def note_model_call(self, input_tokens: int, output_tokens: int, cost: float) -> None:
        """Put one model call in the trajectory, between the tool calls around it."""
        ...


class UserChannel(Protocol):
    """What ``episode.user`` is in a conversational scenario: the customer on the other side
    (a simulated user behind the user-channel perturbations). None in other scenarios."""

    @property
    def opening(self) -> str:
        """What the user said first (the instruction ends with it)."""
        ...

    @property
    def ended(self) -> bool:
        """Whether the user has left: ``say`` returns None from then on."""
        ...

    async def say(self, text: str) -> str | None:
        """Send the user one message; their reply, or None once they have left."""
        ...


@dataclass(frozen=True, init=False)
class TrialLink:
    """A running trial as its wire channels see it: the model channel, the MCP and HTTP tool
    servers and ``exec:`` agents record into its state and draw their faults from its plugins
    with its seeds. Built by the engine for every trial (``Episode.link``); typed loosely so
    the seam does not depend on the engine."""

    trial_id: str  # scenario/cell/index
    scenario: str
    trial: int  # the trial's index in its cell: the plugins' random streams key on it
    run_seed: int
    state: Any  # chaoseval.engine.toolbox.TrialState: trajectory, faults, turn counter
    world: Any  # chaoseval.model.world.World: its clock times the steps
    plugins: list[Any]  # the cell's perturbations, one instance per trial
    usage: Usage  # the episode's usage: model calls over the wire add to it

    def __init__(
        self,
        trial_id: str,
        scenario: str,
        trial: int,
        run_seed: int,
        state: Any,
        world: Any,
        plugins: list[Any],
        usage: Usage,
    ):
        # The generated frozen __init__ sets each field through object.__setattr__ (~1 us a
        # trial); its dict filled at once makes the same frozen instance (tests/seams).
        self.__dict__.update(
            trial_id=trial_id,
            scenario=scenario,
            trial=trial,
            run_seed=run_seed,
            state=state,
            world=world,
            plugins=plugins,
            usage=usage,
        )


@dataclass
class Episode:
    """Everything the agent gets for one trial, already wrapped by the active perturbations."""

    instruction: str
    task: Givens  # the instruction's parameters, for simulated agents that do not parse
    tools: ToolChannel
    clock: Clock
    trial_seed: int
    _model: ModelSettings
    _memory: list[MemoryItem]
    _on_read: Callable[[str], None]
    _observe: Callable[[], Awaitable[str | None]] | None = None
    # The scenario's reference solution, for the reference agents; a real agent ignores it.
    reference: Callable[..., Any] | None = None
    difficulty: float = 0.0  # the scenario's hint for the simulated policy
    usage: Usage = field(default_factory=Usage)
    # The trial behind the episode, for agents that reach it over the wire (None when an
    # episode is built by hand without a trial).
    link: TrialLink | None = None
    # The memory as the agent read it, from the moment it read it (empty until then): what its
    # model may know of it (chaoseval-sim reads this, never the memory itself).
    memory_read: list[MemoryItem] = field(default_factory=list)
    # The customer, in a conversational scenario (``Scenario.user``); None otherwise.
    user: UserChannel | None = None

    @property
    def model(self) -> ModelSettings:
        self._on_read("model")
        return self._model

    @property
    def memory(self) -> list[MemoryItem]:
        self._on_read("memory")
        if self.memory_read is not self._memory:
            self.memory_read[:] = self._memory
        return self._memory

    def serve_memory(self) -> tuple[list[MemoryItem], Callable[[], object]]:
        """The memory for a wire channel to send, and what it calls once the bytes are
        written: then, not before, the agent has read its memory (its faults are delivered)."""
        return self._memory, lambda: self.memory

    def now(self) -> datetime:
        self._on_read("clock")
        return self.clock.now()

    @property
    def has_ui(self) -> bool:
        return self._observe is not None

    async def observe(self) -> str | None:
        """The current UI page (HTML), if the scenario has one."""
        if self._observe is None:
            return None
        return await self._observe()

    def rng(self, purpose: str) -> random.Random:
        """The agent's own randomness, from the trial seed and the model's sampling seed."""
        return stream(self.trial_seed, self._model.seed, self._model.temperature, purpose)

    def record_model_call(self, input_tokens: int, output_tokens: int, cost: float = 0.0) -> None:
        self.usage.model_calls += 1
        self.usage.input_tokens += input_tokens
        self.usage.output_tokens += output_tokens
        self.usage.cost += cost
        self.tools.note_model_call(input_tokens, output_tokens, cost)


@runtime_checkable
class AgentAdapter(Protocol):
    async def run(self, episode: Episode) -> AgentOutput: ...


def _agent_factory(name: str, obj: object) -> Callable[..., AgentAdapter]:
    """An agent registers as a factory (anything callable) or as an adapter object itself."""
    if callable(obj) or isinstance(obj, AgentAdapter):
        return cast("Callable[..., AgentAdapter]", obj)
    raise ConfigError(f"agent {name!r}: {obj!r} is neither a factory nor has 'async run(episode)'")


registry: Registry[Callable[..., AgentAdapter]] = Registry(
    "agent", "chaoseval.agents", _agent_factory
)
agent = registry.register


# Agents named by a prefix, not a registered name: ``exec:COMMAND`` is a process. Their loader
# is imported by name, as an entry point is, so the seam does not depend on the adapters.
PREFIXED = {"exec:": "chaoseval.agents.process:exec_agent"}


# ``name`` or ``module:factory`` (neither holds '='), then ':' and parameters from ``key=``.
_WITH_PARAMS = re.compile(r"(?P<agent>[^:=]+(?::[^:=]+)?):(?P<params>[A-Za-z_]\w*\s*=.*)", re.S)


def split_agent(spec: str) -> tuple[str, dict[str, Any]]:
    """``resilient:slips=false`` -> ("resilient", {"slips": False}); ``mod:factory`` and
    ``exec:COMMAND`` have no parameters."""
    m = None if spec.startswith(tuple(PREFIXED)) else _WITH_PARAMS.fullmatch(spec)
    if m is None:
        return spec, {}
    params = {k: scalar(v) for k, v in key_values(m["params"], f"--agent {spec}")}
    return m["agent"], params


def _call_factory(name: str, factory: Callable[..., Any], params: dict[str, Any]) -> object:
    """The factory called with the spec's parameters, an unknown one refused with its fix."""
    if not params:
        return factory()
    try:
        accepted: Mapping[str, inspect.Parameter] | None = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin or C callable: let the call decide
        accepted = None
    if accepted is None or any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
        accepted = None
    for key in params:
        if accepted is not None and key not in accepted:
            names = [n for n in accepted if not n.startswith("_")]
            close = difflib.get_close_matches(key, names, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            known = ", ".join(names) or "none"
            raise ConfigError(
                f"--agent {name}: unknown parameter {key!r}{hint} (it takes: {known})"
            )
    try:
        return factory(**params)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"--agent {name}: bad parameters {params}: {exc}") from None


def load_agent(name: str) -> AgentAdapter:
    for prefix, loader in PREFIXED.items():
        if name.startswith(prefix):
            make = cast("Callable[[str], AgentAdapter]", import_object(loader))
            return make(name)
    base, params = split_agent(name)
    factory = registry.get(base)
    if isinstance(factory, AgentAdapter) or not callable(factory):
        if params:
            raise ConfigError(f"--agent {base} is an agent object and takes no parameters")
        obj: object = factory
    else:
        obj = _call_factory(base, factory, params)
    if not isinstance(obj, AgentAdapter):
        raise ConfigError(f"agent {name!r} did not give an object with 'async run(episode)'")
    if not inspect.iscoroutinefunction(obj.run):  # else every trial crashes on its await
        raise ConfigError(
            f"agent {name!r}: {type(obj).__name__}.run is not async; define it as "
            "'async def run(self, episode)'"
        )
    return obj

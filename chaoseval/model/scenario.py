"""The Scenario model: what the agent is asked, the world it acts on, and how it is judged.

Scenarios are validated pydantic models. Tools are Python callables ``fn(world, **args)``
with a pydantic model of their arguments (built from the signature) and of their result.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from faker import Faker
from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

# Budgets and CheckResult are recorded in the journal, so they live with the records; a
# scenario author imports them from here as before.
from chaoseval.model.clock import frozen_at
from chaoseval.model.conversation import UserSpec
from chaoseval.model.device import DESKTOP, Viewport
from chaoseval.model.drift import DriftPoint
from chaoseval.model.injection import Payload
from chaoseval.model.records import Budgets as Budgets
from chaoseval.model.records import CheckResult as CheckResult
from chaoseval.model.records import ScenarioInfo, file_sha256

if TYPE_CHECKING:
    from chaoseval.model.records import AgentOutput
    from chaoseval.model.trajectory import Fault, Trajectory
    from chaoseval.model.world import World

# A world's rows and a task's givens are the scenario's own data: their shape is whatever the
# scenario declares (ids, names, dates), so they stay open mappings under these names.
Row = dict[str, Any]
Tables = dict[str, list[Row]]
Givens = dict[str, Any]


class ToolDescription(TypedDict):
    """A tool as a function-calling LLM is shown it: JSON schemas of its arguments and result."""

    name: str
    description: str
    parameters: dict[str, Any]
    returns: dict[str, Any] | None


@functools.cache
def _schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema())


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model.model_json_schema()``, made once per model: pydantic builds it anew on every
    call (milliseconds a tool), and a tool list is asked for on every agent request (GET
    /tools, MCP ``tools/list``). A fresh copy each time: callers may rewrite it (schema drift)."""
    schema: dict[str, Any] = json.loads(_schema_text(model))
    return schema


class ToolSpec(BaseModel):
    """A tool the agent can call: ``fn(world, **args)`` returns JSON data or raises ToolError."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    description: str
    fn: Callable[..., Any]
    params: type[BaseModel]
    returns: type[BaseModel] | None = None
    writes: tuple[str, ...] = ()
    version: str = "1"

    def params_schema(self) -> dict[str, Any]:
        return json_schema(self.params)

    def returns_schema(self) -> dict[str, Any] | None:
        return json_schema(self.returns) if self.returns else None

    def describe(self) -> ToolDescription:
        """The function-calling description an LLM agent would be given."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.params_schema(),
            "returns": self.returns_schema(),
        }


def tool(
    *,
    returns: type[BaseModel] | None = None,
    writes: Sequence[str] = (),
    name: str | None = None,
    version: str = "1",
) -> Callable[[Callable[..., Any]], ToolSpec]:
    """Turn ``def lookup_order(world, order_id: str) -> dict`` into a ToolSpec.

    The argument model comes from the signature (everything after ``world``) so the JSON schema
    an agent sees and the validation the harness applies can never disagree.
    """

    def decorate(fn: Callable[..., Any]) -> ToolSpec:
        sig = inspect.signature(fn)
        fields: dict[str, Any] = {}
        for i, (pname, p) in enumerate(sig.parameters.items()):
            if i == 0:
                continue  # the world
            ann = p.annotation if p.annotation is not inspect.Parameter.empty else Any
            default = p.default if p.default is not inspect.Parameter.empty else ...
            fields[pname] = (ann, default)
        tool_name = name or fn.__name__
        params = create_model(
            f"{tool_name}_args", __config__=ConfigDict(extra="forbid", strict=False), **fields
        )
        return ToolSpec(
            name=tool_name,
            description=inspect.cleandoc(fn.__doc__ or tool_name),
            fn=fn,
            params=params,
            returns=returns,
            writes=tuple(writes),
            version=version,
        )

    return decorate


class Policy(BaseModel):
    """What the agent may do. Anything else is a safety violation that vetoes success."""

    allowed_tools: list[str] | None = None  # None: every tool of the scenario
    forbidden_writes: list[str] = Field(default_factory=list)  # tables the agent must not touch


class FactSpec(BaseModel):
    """Ids or clauses that exist in the world; any other match of ``pattern`` is a hallucination."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    pattern: str
    values: Callable[..., set[str]]  # (world) -> the ids that exist

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str) -> str:
        re.compile(v)
        return v


class MemoryItem(BaseModel):
    """A fact the agent remembers from an earlier session."""

    key: str
    value: Any
    session: str = "earlier"
    recorded_at: datetime | None = None
    # Of a structured value (a mapping): the fields a stale copy may have wrong (the order's
    # total, not its id), which ``stale_memory`` falsifies; a scalar value is falsified whole.
    stale_fields: list[str] = Field(default_factory=list)


CHECK_KINDS = ("state", "output", "process")
VETO_KINDS = ("safety", "hallucination")
# A veto rule's name is what a gate rule writes between the parentheses of ``vetoes(...)``.
VETO_NAME = r"^[a-z0-9][a-z0-9_.-]*$"


class Check(BaseModel):
    """One verifier check over the final world, the agent's output and the trajectory."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    fn: Callable[..., bool | tuple[bool, str]]  # (world, output, trajectory)
    kind: str = "state"  # state | output | process: feeds the root-cause slice

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, v: str) -> str:
        # A check of another kind would be judged as an ordinary one: a "safety" check that
        # failed would read as a wrong final state, never as the violation it was meant to be.
        if v not in CHECK_KINDS:
            hint = (
                "; a rule whose breach is a safety violation or a hallucination is a veto: "
                "Scenario(vetoes=[VetoRule(name=..., kind=..., fn=...)]) (vetoes: in YAML)"
                if v in VETO_KINDS
                else ""
            )
            raise ValueError(f"check kind {v!r} is not one of {', '.join(CHECK_KINDS)}{hint}")
        return v

    def run(self, world: World, output: AgentOutput, trajectory: Trajectory) -> CheckResult:
        verdict = self.fn(world, output, trajectory)
        passed, detail = verdict if isinstance(verdict, tuple) else (verdict, "")
        return CheckResult(name=self.name, passed=bool(passed), detail=detail)


class VetoRule(BaseModel):
    """A rule whose breach fails the trial whatever its checks say, counted under its name:
    ``kind="safety"`` (a refund above the order total) is a safety violation, ``kind=
    "hallucination"`` a hallucination. ``fn(world, output, trajectory, initial)`` returns one
    line per breach (empty: the rule held); ``output`` is None when the agent returned none,
    ``initial`` the tables the trial started from."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    name: str = Field(pattern=VETO_NAME, max_length=64)
    kind: Literal["safety", "hallucination"] = "safety"
    fn: Callable[..., list[str]]


class DegradationContract(BaseModel):
    """What a correct degraded outcome is when a fault hits: "if the dispense log times out,
    refund nothing, open a ticket and tell the customer it is escalated".

    It applies to a trial in which a fault it names was delivered: one on a tool in ``tools``
    (every tool when empty) of a kind in ``faults`` (``timeout``, ``http_error``,
    ``connection_reset``, ``malformed``, ..., or a plugin's name; every kind when empty). Such
    a trial passes when the scenario's own checks pass or when these checks do."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    name: str
    tools: list[str] = Field(default_factory=list)
    faults: list[str] = Field(default_factory=list)
    checks: list[Check] = Field(min_length=1)

    @model_validator(mode="after")
    def _names_something(self) -> DegradationContract:
        if not self.tools and not self.faults:
            raise ValueError(
                f"degradation contract {self.name!r} names neither tools nor faults: say "
                "which faults it covers (tools=['read_log'], faults=['timeout'])"
            )
        return self

    def covers(self, fault: Fault, tool: str | None) -> bool:
        """Whether ``fault`` (which touched a call to ``tool``, if any) is one this names."""
        kind_ok = not self.faults or fault.kind in self.faults or fault.perturbation in self.faults
        return kind_ok and (not self.tools or tool in self.tools)


Solution = Callable[..., Awaitable[Any]]  # async (actor) -> AgentOutput
WorldFactory = Callable[..., tuple[Tables, Givens]]  # (faker) -> (tables, givens)


class Scenario(BaseModel):
    """A task with its world, tools, verifier, policy, facts, budgets and reference solution."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    # Bounded: ids name trial ids and artifact directories (a file name holds 255 bytes).
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$", max_length=128)
    description: str
    domain: str
    tags: list[str] = Field(default_factory=list)
    instruction: str  # a str.format template over the world's givens
    tables: Tables = Field(default_factory=dict)  # literal initial world
    generate: WorldFactory | None = None  # faker-generated world: (tables, givens)
    givens: Givens = Field(default_factory=dict)
    tools: list[ToolSpec]
    checks: list[Check] = Field(min_length=1)
    # What a correct degraded outcome is under the faults each names (judged only in trials
    # where such a fault reached the agent).
    contracts: list[DegradationContract] = Field(default_factory=list)
    # Where the world moves between the agent's read and its write (the ``drift`` plugin).
    drift: list[DriftPoint] = Field(default_factory=list)
    policy: Policy = Field(default_factory=Policy)
    facts: list[FactSpec] = Field(default_factory=list)
    # Named rules whose breach is a safety violation or a hallucination (gate: vetoes(NAME)).
    vetoes: list[VetoRule] = Field(default_factory=list)
    budgets: Budgets = Field(default_factory=Budgets)
    solution: Solution
    reference_steps: int = Field(ge=1)  # tool calls the reference solution makes
    start_time: datetime = datetime(2026, 3, 16, 10, 0)
    freeze_time: bool = False  # run tool bodies under freezegun at the world's now
    memory: list[MemoryItem] = Field(default_factory=list)
    # Instructions an attacker could plant in what the agent reads, beside the catalogue's
    # (the injection plugins choose among those whose goal a tool here can reach).
    payloads: list[Payload] = Field(default_factory=list)
    ui: str | None = None  # an HTML page given to the agent as its observation
    # A customer on the other side (a conversation): the instruction ends with what they
    # said first, and the agent talks to them through ``episode.user`` (docs/CONVERSATIONS.md).
    user: UserSpec | None = None
    # The device the page is designed for and seen on in a browser (a name, "WxH" or fields).
    viewport: Viewport = DESKTOP
    # How often the simulated reference policy slips per decision at temperature 1.0.
    difficulty: float = Field(default=0.05, ge=0, le=1)
    source: str | None = None  # the file it was loaded from

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        names = [t.name for t in self.tools]
        dupes = {n for n in names if names.count(n) > 1}
        if dupes:
            raise ValueError(f"tool names must be unique; repeated: {sorted(dupes)}")
        for c in self.contracts:
            if set(c.tools) - set(names):
                raise ValueError(
                    f"degradation contract {c.name!r} names tools the scenario lacks: "
                    f"{sorted(set(c.tools) - set(names))}"
                )
        rules = [v.name for v in self.vetoes]
        if len(set(rules)) != len(rules):
            raise ValueError(f"veto rule names must be unique; repeated: {sorted(rules)}")
        points = [p.name for p in self.drift]
        if len(set(points)) != len(points):
            raise ValueError(f"drift point names must be unique; repeated: {sorted(points)}")
        if self.user is not None and self.user.demand and self.user.demand.tool not in names:
            raise ValueError(
                f"user.demand names tool {self.user.demand.tool!r}, which the scenario lacks"
            )
        if self.policy.allowed_tools is not None:
            unknown = set(self.policy.allowed_tools) - set(names)
            if unknown:
                raise ValueError(
                    f"policy.allowed_tools names tools the scenario lacks: {sorted(unknown)}"
                )
        return self

    def info(self) -> ScenarioInfo:
        """What the run's manifest records about this scenario."""
        info = ScenarioInfo(
            id=self.id,
            domain=self.domain,
            tags=self.tags,
            source=self.source,
            tools={t.name: t.version for t in self.tools},
            budgets=self.budgets,
        )
        if self.vetoes:  # a given field is a written one: older manifests read the same
            info.vetoes = {v.name: v.kind for v in self.vetoes}
        digest = file_sha256(self.source)
        if digest is not None:  # a given field is a written one (ScenarioInfo)
            info.sha256 = digest
        return info

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)

    def build(self, world_seed: int) -> tuple[Tables, Givens]:
        """Initial tables and givens; generated ones come from faker seeded by the world seed."""
        if self.generate is None:
            return self.tables, dict(self.givens)
        fake = Faker()
        fake.seed_instance(world_seed)
        # Faker's relative dates ("-30d") read the wall clock; pin it to the world's start so
        # the same seed builds the same world on any day.
        with frozen_at(self.start_time):
            tables, givens = self.generate(fake)
        return {**self.tables, **tables}, {**self.givens, **givens}

    def remembered(self, givens: Givens) -> list[MemoryItem]:
        """The memory a trial starts with (a copy: perturbations rewrite it)."""
        return [m.model_copy(deep=True) for m in self.memory]

    def render_instruction(self, givens: Givens) -> str:
        text = self.instruction.format(**givens)
        if self.user is not None:
            text = f"{text}\n\nCustomer: {self.user.opening.format(**givens)}"
        return text

    def allowed(self, tool_name: str) -> bool:
        return self.policy.allowed_tools is None or tool_name in self.policy.allowed_tools

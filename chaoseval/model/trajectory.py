"""A trial's trajectory: the agent's steps and the faults injected, in one history.

Faults sit beside the steps they affected, with ``delivered`` telling whether the agent
actually received them: a fault that never reached the agent must not count as survived.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator
from pydantic_core import to_jsonable_python

Channel = Literal["tool", "observation", "model", "memory", "clock"]
StepKind = Literal["tool", "observation", "model", "memory", "answer", "note"]
ResultClass = Literal[
    "ok", "malformed", "tool_error", "timeout", "http_error", "connection_reset", "harness_error"
]


class Fault(BaseModel):
    perturbation: str
    channel: Channel
    kind: str
    # The plugin's own account of what it did: JSON, whatever Python values the plugin passed.
    detail: dict[str, JsonValue] = Field(default_factory=dict)
    call_index: int = 0
    step: int | None = None  # the step it affected
    delivered: bool = False

    @field_validator("detail", mode="before")
    @classmethod
    def _as_json(cls, value: Any) -> Any:
        # Dates, tuples and models become what the journal will hold, so a judge reading the
        # fault in the trial sees the same values as a report reading the journal later.
        return to_jsonable_python(value)


class ModelCallData(BaseModel):
    """A model step: what the call cost (agents report it through Episode.record_model_call)."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int
    output_tokens: int
    cost: float


class AnswerData(BaseModel):
    """The answer step: whether the agent gave up instead of answering."""

    model_config = ConfigDict(extra="forbid")

    gave_up: bool


class NoData(BaseModel):
    """Steps whose whole story is in the step's own fields (tool calls, observations)."""

    model_config = ConfigDict(extra="forbid")


# Each kind of step carries its own data; a new kind of step adds its model here.
StepData = ModelCallData | AnswerData | NoData


class Step(BaseModel):
    index: int
    kind: StepKind
    t: float = 0.0  # trial clock seconds when the step started
    tool: str | None = None
    args: dict[str, Any] | None = None
    result_class: ResultClass | None = None
    result: Any = None  # an excerpt; large results are truncated
    error: str | None = None
    latency: float = 0.0
    faults: list[int] = Field(default_factory=list)  # indices into Trajectory.faults
    data: StepData = Field(default_factory=NoData)

    @property
    def gave_up(self) -> bool:
        """An answer step where the agent stopped and said it could not finish."""
        return isinstance(self.data, AnswerData) and self.data.gave_up


M = TypeVar("M", bound=BaseModel)


def assign(model: BaseModel, **values: Any) -> None:
    """``model.name = value`` for each field named."""
    for name, value in values.items():
        setattr(model, name, value)


def shallow_copy(model: M) -> M:
    """``model.model_copy()``."""
    return model.model_copy()


def answer_data(gave_up: bool) -> AnswerData:
    """``AnswerData(gave_up=gave_up)``."""
    return AnswerData(gave_up=gave_up)


def tool_step(
    index: int,
    t: float,
    tool: str,
    args: dict[str, Any],
    result_class: Any,
    result: Any,
    error: str | None,
    latency: float,
) -> Step:
    """A tool call's step made whole when the call ends, no fault on it: the step
    ``add_step("tool", t=t, tool=tool, args=args)`` then ``assign`` of the rest makes (the
    same fields, values and fields set), in one go (tests/model/test_built.py)."""
    return Step(
        index=index, kind="tool", t=t, tool=tool, args=args, result_class=result_class,
        result=result, error=error, latency=latency, faults=[],
    )  # fmt: skip


class Trajectory(BaseModel):
    steps: list[Step] = Field(default_factory=list)
    faults: list[Fault] = Field(default_factory=list)

    @classmethod
    def empty(cls) -> Trajectory:
        """``Trajectory()``, as every trial starts one."""
        return cls()

    def add_step(self, kind: StepKind, t: float = 0.0, **fields: Any) -> Step:
        step = Step(index=len(self.steps), kind=kind, t=t, **fields)
        self.steps.append(step)
        return step

    def add_bare_step(self, kind: StepKind, t: float) -> Step:
        """``add_step(kind, t=t)``: a step with no other field given yet (a model request's
        at its start)."""
        return self.add_step(kind, t)

    def add_fault(self, fault: Fault) -> int:
        self.faults.append(fault)
        return len(self.faults) - 1

    def tool_steps(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "tool"]

    def tool_calls(self, name: str | None = None) -> list[Step]:
        return [s for s in self.tool_steps() if name is None or s.tool == name]

    def called(self, name: str, **args: Any) -> bool:
        return any(
            all((s.args or {}).get(k) == v for k, v in args.items())
            for s in self.tool_calls(name)
            if s.result_class == "ok"
        )

"""A trial's trajectory: the agent's steps and the faults injected, in one history.

Faults sit beside the steps they affected, with ``delivered`` telling whether the agent
actually received them: a fault that never reached the agent must not count as survived.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator
from pydantic_core import to_jsonable_python

Channel = Literal["tool", "observation", "model", "memory", "clock", "user"]
StepKind = Literal["tool", "observation", "model", "memory", "answer", "note", "user"]
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


class UserTurnData(BaseModel):
    """A turn of a conversation (a ``user`` step: the agent's message in ``args["text"]``, the
    user's reply in ``result``), as the simulated user read the message: the facts it asked
    for, the facts it stated right and wrong, whether it asked the user to confirm and the
    user agreed, and whether the user left with this reply. Dialogue checks read these."""

    model_config = ConfigDict(extra="forbid")

    # Required, so a step's empty data ({}) never reads back as a user turn (the union below
    # takes the first model that validates).
    turn: int  # the agent's n-th message to the user (1-based)
    asked: list[str] = Field(default_factory=list)
    stated: list[str] = Field(default_factory=list)
    misstated: list[str] = Field(default_factory=list)
    confirm: bool = False
    agreed: bool = False
    ended: bool = False


class NoData(BaseModel):
    """Steps whose whole story is in the step's own fields (tool calls, observations)."""

    model_config = ConfigDict(extra="forbid")


# Each kind of step carries its own data; a new kind of step adds its model here.
StepData = ModelCallData | AnswerData | UserTurnData | NoData


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
# BaseModel's slots, set through their descriptors (what object.__setattr__ looks up per call).
# pydantic's private slots, kept on purpose (issue 47: public APIs unless a met target needs
# one): with validation and model_copy in place of built/assign/shallow_copy, 10k trivial
# virtual-clock trials measured 0.76 -> 0.89 s (+17%, with the other private uses removed
# too; those alone were within 5%), which moved make bench's run / bare-loop ratio from 9.2x
# over its 10x target. tests/model/test_built.py compares every shape with validation, so a
# pydantic upgrade that changes the slots fails there, not silently.
_SLOTS = BaseModel.__dict__
_set_fields_set = _SLOTS["__pydantic_fields_set__"].__set__
_set_extra = _SLOTS["__pydantic_extra__"].__set__
_set_private = _SLOTS["__pydantic_private__"].__set__


def built(cls: type[M], values: dict[str, Any], fields_set: set[str]) -> M:
    """The model validation would make of ``values`` (every field, in field order, each
    already of its field's type), without running it: for the few models every trial makes
    several of, where validating what chaoseval itself just built cost a tenth of a trivial
    trial. Callers check the types (tests/model/test_built.py compares with validation)."""
    model = object.__new__(cls)
    object.__setattr__(model, "__dict__", values)
    _set_fields_set(model, fields_set)
    _set_extra(model, None)
    _set_private(model, None)
    return model


def assign(model: BaseModel, **values: Any) -> None:
    """``model.name = value`` for each field named: what pydantic's ``__setattr__`` does for a
    model that neither validates assignments nor is frozen (its dict and its fields set),
    without the dispatch it runs per attribute (a tool call sets five of them)."""
    config = model.model_config
    if config.get("validate_assignment") or config.get("frozen"):
        for name, value in values.items():
            setattr(model, name, value)
        return
    model.__dict__.update(values)
    model.model_fields_set.update(values)  # the model's own set (pydantic's property)


def shallow_copy(model: M) -> M:
    """``model.model_copy()``: the same copy, without pydantic's generic steps (half the time)."""
    if model.model_extra is not None or type(model).__private_attributes__:
        return model.model_copy()
    return built(type(model), model.__dict__.copy(), model.model_fields_set.copy())


def answer_data(gave_up: bool) -> AnswerData:
    """``AnswerData(gave_up=gave_up)``."""
    if type(gave_up) is not bool:
        return AnswerData(gave_up=gave_up)
    return built(AnswerData, {"gave_up": gave_up}, {"gave_up"})


_KINDS = frozenset(get_args(StepKind))
_DATA = (ModelCallData, AnswerData, UserTurnData, NoData)
_FIELDS = frozenset(("tool", "args", "data"))
_NO_DATA: Any = object()  # no data given: the field's default
# One NoData for every step without data: it has no fields to change and takes no others
# (extra="forbid"), so sharing it is sharing nothing.
_EMPTY = NoData()


def _str_keys(mapping: dict[Any, Any]) -> bool:
    return all(type(k) is str for k in mapping)


def _step(index: int, kind: Any, t: Any, fields: dict[str, Any]) -> Step:
    """``Step(index=index, kind=kind, t=t, **fields)``, validated by hand in the shapes the
    channels add (a tool's name and keyword arguments, a step's data), by pydantic otherwise."""
    tool, args, data = fields.get("tool"), fields.get("args"), fields.get("data", _NO_DATA)
    if (
        type(t) is not float
        or kind not in _KINDS
        or type(kind) is not str
        or not fields.keys() <= _FIELDS
        or (tool is not None and type(tool) is not str)
        or (args is not None and (type(args) is not dict or (args and not _str_keys(args))))
        or (data is not _NO_DATA and type(data) not in _DATA)
    ):
        return Step(index=index, kind=kind, t=t, **fields)
    values: dict[str, Any] = {
        "index": index,
        "kind": kind,
        "t": t,
        "tool": tool,
        "args": None if args is None else dict(args),  # validation copies it too
        "result_class": None,
        "result": None,
        "error": None,
        "latency": 0.0,
        "faults": [],
        "data": _EMPTY if data is _NO_DATA else data,
    }
    return built(Step, values, {"index", "kind", "t", *fields})


_TOOL_SET = frozenset(
    ("index", "kind", "t", "tool", "args", "result_class", "result", "error", "latency", "faults")
)
_TOOL_FIELDS = set(_TOOL_SET)
# tool_step's values before its own: every field of Step in field order, "kind" and "data" as
# every plain tool step has them.
_TOOL_VALUES: dict[str, Any] = dict.fromkeys(Step.model_fields) | {"kind": "tool", "data": _EMPTY}


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
    same fields, values and fields set), in one go. ``args`` is kept, not copied: the call's
    own dict, which nothing changes after (tests/model/test_built.py)."""
    if type(t) is not float or type(tool) is not str or type(args) is not dict or (
        args and not _str_keys(args)
    ):
        step = _step(index, "tool", t, {"tool": tool, "args": args})
        assign(step, faults=[], result_class=result_class, error=error, latency=latency,
               result=result)  # fmt: skip
        return step
    # A copy of a dict of the step's keys in field order, then its values: a copy takes the
    # keys' table whole where a dict display inserts (and hashes) each key anew.
    values = _TOOL_VALUES.copy()
    values["index"] = index
    values["t"] = t
    values["tool"] = tool
    values["args"] = args
    values["result_class"] = result_class
    values["result"] = result
    values["error"] = error
    values["latency"] = latency
    values["faults"] = []
    return built(Step, values, _TOOL_FIELDS.copy())


class Trajectory(BaseModel):
    steps: list[Step] = Field(default_factory=list)
    faults: list[Fault] = Field(default_factory=list)

    @classmethod
    def empty(cls) -> Trajectory:
        """``Trajectory()``, as every trial starts one."""
        return built(cls, {"steps": [], "faults": []}, set())

    def add_step(self, kind: StepKind, t: float = 0.0, **fields: Any) -> Step:
        step = _step(len(self.steps), kind, t, fields)
        self.steps.append(step)
        return step

    def add_bare_step(self, kind: StepKind, t: float) -> Step:
        """``add_step(kind, t=t)``: a step with no other field given yet (a model request's
        at its start), made without the checks of fields it is not given when ``t`` is a
        float and ``kind`` a kind (tests/model/test_built.py compares the two)."""
        if type(t) is not float or type(kind) is not str or kind not in _KINDS:
            return self.add_step(kind, t)
        steps = self.steps
        values: dict[str, Any] = {
            "index": len(steps), "kind": kind, "t": t, "tool": None, "args": None,
            "result_class": None, "result": None, "error": None, "latency": 0.0, "faults": [],
            "data": _EMPTY,
        }  # fmt: skip
        step = built(Step, values, {"index", "kind", "t"})
        steps.append(step)
        return step

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

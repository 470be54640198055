"""Models built without validation on the trial's hot path are the models validation makes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from chaoseval.model.records import RootCause, Usage
from chaoseval.model.trajectory import (
    AnswerData,
    ModelCallData,
    NoData,
    Step,
    Trajectory,
    answer_data,
    assign,
    tool_step,
)

_SENTINEL = object()


def _same(built: BaseModel, validated: BaseModel) -> None:
    assert type(built) is type(validated)
    assert built == validated
    assert built.model_dump_json() == validated.model_dump_json()
    assert built.model_fields_set == validated.model_fields_set
    assert list(built.__dict__) == list(validated.__dict__)  # the order the journal writes
    assert built.__pydantic_extra__ == validated.__pydantic_extra__
    assert built.__pydantic_private__ == validated.__pydantic_private__


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)
kinds = st.sampled_from(["tool", "observation", "model", "memory", "answer", "note", "bogus"])
times = st.floats(allow_nan=False) | st.integers(-3, 3) | st.just("0.5")
tools = st.none() | st.text(max_size=5) | st.integers(0, 3)
args = st.none() | st.dictionaries(st.text(max_size=3) | st.integers(0, 3), json_values, max_size=3)
datas = st.sampled_from(
    [
        NoData(),
        AnswerData(gave_up=True),
        ModelCallData(input_tokens=1, output_tokens=2, cost=0.5),
        None,
        {"gave_up": False},
        {},
    ]
)


@given(
    kind=kinds,
    t=times,
    tool=st.just(_SENTINEL) | tools,
    arguments=st.just(_SENTINEL) | args,
    data=st.just(_SENTINEL) | datas,
)
def test_add_step_makes_what_validation_makes(
    kind: str, t: Any, tool: Any, arguments: Any, data: Any
) -> None:
    fields = {
        k: v for k, v in (("tool", tool), ("args", arguments), ("data", data)) if v is not _SENTINEL
    }
    trajectory = Trajectory()
    trajectory.add_step("note")
    try:
        validated = Step(index=1, kind=kind, t=t, **fields)  # type: ignore[arg-type]
    except ValidationError:
        validated = None
    try:
        made = trajectory.add_step(kind, t=t, **fields)  # type: ignore[arg-type]
    except ValidationError:
        assert validated is None
        return
    assert validated is not None
    _same(made, validated)
    if isinstance(arguments, dict):
        assert made.args is not arguments  # a copy, as validation makes
    if isinstance(data, BaseModel):
        assert made.data is validated.data  # an instance given is kept, as validation keeps it


@given(kind=kinds, t=times)
def test_a_bare_step_is_what_validation_makes(kind: str, t: Any) -> None:
    trajectory = Trajectory()
    trajectory.add_step("note")
    try:
        validated = Step(index=1, kind=kind, t=t)  # type: ignore[arg-type]
    except ValidationError:
        validated = None
    try:
        made = trajectory.add_bare_step(kind, t)  # type: ignore[arg-type]
    except ValidationError:
        assert validated is None
        return
    assert validated is not None
    _same(made, validated)
    assert trajectory.steps[-1] is made
    other = trajectory.add_bare_step("model", 0.0)
    assert other.faults is not made.faults  # no list shared between steps


@given(
    t=times,
    tool=tools,
    arguments=st.dictionaries(st.text(max_size=3) | st.integers(0, 3), json_values, max_size=3),
    result_class=st.sampled_from(["ok", "malformed", "timeout", "harness_error"]),
    result=json_values,
    error=st.none() | st.text(max_size=5),
    latency=st.floats(0, 10),
)
def test_a_tool_step_made_at_once_is_the_step_added_then_assigned(
    t: Any, tool: Any, arguments: Any, result_class: Any, result: Any, error: Any, latency: float
) -> None:
    rest = {"result_class": result_class, "result": result, "error": error, "latency": latency}
    trajectory = Trajectory()
    trajectory.add_step("note")
    try:
        added = trajectory.add_step("tool", t=t, tool=tool, args=arguments)
    except ValidationError:
        with pytest.raises(ValidationError):
            tool_step(1, t, tool, arguments, **rest)
        return
    assign(added, faults=[], **rest)
    made = tool_step(1, t, tool, arguments, **rest)
    _same(made, added)
    other = tool_step(1, t, tool, arguments, **rest)
    assert made.faults is not other.faults
    assert made.__dict__ is not other.__dict__
    assert made.model_fields_set is not other.model_fields_set


@given(st.booleans() | st.integers(0, 2) | st.just("yes"))
def test_answer_data_is_what_validation_makes(gave_up: Any) -> None:
    try:
        validated = AnswerData(gave_up=gave_up)
    except ValidationError:
        validated = None
    try:
        made = answer_data(gave_up)
    except ValidationError:
        assert validated is None
        return
    assert validated is not None
    _same(made, validated)


def test_empty_usage_is_what_validation_makes() -> None:
    a, b = Usage.empty(), Usage.empty()
    _same(a, Usage())
    a.cost = 1.0
    assert b.cost == 0.0


def test_an_empty_trajectory_is_what_validation_makes() -> None:
    a, b = Trajectory.empty(), Trajectory.empty()
    _same(a, Trajectory())
    assert a.steps is not b.steps and a.faults is not b.faults


def test_steps_share_no_list_and_their_empty_data_cannot_change() -> None:
    trajectory = Trajectory()
    a, b = trajectory.add_step("tool", t=0.0), trajectory.add_step("tool", t=0.0)
    assert a.data == NoData() and a.faults is not b.faults
    with pytest.raises(ValueError):
        a.data.gave_up = True  # type: ignore[attr-defined]
    a.data = AnswerData(gave_up=True)  # replacing one step's data leaves the other's
    assert b.data == NoData()


@given(
    result_class=st.sampled_from(["ok", "timeout", None]),
    latency=st.floats(0, 10),
    result=json_values,
    faults=st.lists(st.integers(0, 3), max_size=2),
)
def test_assign_is_setattr(
    result_class: Any, latency: float, result: Any, faults: list[int]
) -> None:
    values = {"result_class": result_class, "latency": latency, "result": result, "faults": faults}
    by_setattr = Step(index=0, kind="tool", t=0.0, tool="x")
    for name, value in values.items():
        setattr(by_setattr, name, value)
    by_assign = Step(index=0, kind="tool", t=0.0, tool="x")
    assign(by_assign, **values)
    _same(by_assign, by_setattr)


def test_assign_keeps_a_frozen_model_frozen() -> None:
    frozen = RootCause(name="x", label="X")
    with pytest.raises(ValidationError):
        assign(frozen, label="Y")
    assert frozen.label == "X"

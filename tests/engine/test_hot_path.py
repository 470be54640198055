"""The trial's hot-path shortcuts give exactly what the plain calls they replace give."""

from __future__ import annotations

import dataclasses
import json
import pickle
from datetime import UTC, date, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from chaoseval.engine.toolbox import Received, _received
from chaoseval.engine.tooljson import _dumps, _loads, utf8_json
from chaoseval.engine.trial import TrialPlan, _new_record, trial_seed
from chaoseval.model.clock import round6
from chaoseval.model.records import (
    AgentOutput,
    Cell,
    ModelSettings,
    TrialRecord,
    Usage,
    make_trial_id,
)
from chaoseval.model.scenario import Scenario
from chaoseval.model.seeding import derive_seed
from chaoseval.model.trajectory import Trajectory, shallow_copy
from chaoseval.redact import _may_hold_credential
from chaoseval.seams.agent import TrialLink
from chaoseval.seams.perturbation import FailureContext

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)
# What a tool may return besides JSON: the text falls back to str() of the rest.
values = st.recursive(
    json_values | st.dates() | st.tuples(st.integers()),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)


@given(st.text(max_size=8), values)
def test_received_made_without_its_new_is_the_named_tuple(text: str, sent: Any) -> None:
    made = _received((text, sent))
    assert type(made) is Received and made == Received(text, sent)
    assert made.text is text and made.sent is sent and made.echo == Received(text, sent).echo


@given(values)
def test_dumps_is_json_dumps_with_str_for_the_rest(value: Any) -> None:
    assert _dumps(value) == json.dumps(value, default=str)


@given(json_values)
def test_loads_of_dumps_is_json_loads(value: Any) -> None:
    text = _dumps(value)
    # NaN != NaN: compare the texts of the two results.
    assert json.dumps(_loads(text)) == json.dumps(json.loads(text))


def test_loads_and_dumps_keep_their_errors() -> None:
    circular: list[Any] = []
    circular.append(circular)
    for bad in (circular, {1j: 1}):
        try:
            json.dumps(bad, default=str)
        except (TypeError, ValueError) as exc:
            expected: type[Exception] = type(exc)
        try:
            _dumps(bad)
        except expected:
            pass
        else:
            raise AssertionError(f"{bad!r} encoded")
    assert _dumps([circular[0] is circular, date(2026, 1, 2)]) == '[true, "2026-01-02"]'
    assert _loads('{"a": 1} ') == {"a": 1}  # not what _dumps writes: json.loads reads it


# Text as tool results carry it: accents, zero-width joins, control characters, a literal
# backslash before a "u" (escaped as ``\\u`` in both texts), astral characters.
wire_text = st.text(alphabet=st.sampled_from('ab \\u"\n\x01\x7f\u00eb\u200b\U0001f600'))
wire_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | wire_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(wire_text, inner, max_size=4),
    max_leaves=12,
)


@given(wire_values)
def test_utf8_json_from_the_toolbox_text_is_json_dumps_without_ascii_escapes(value: Any) -> None:
    expected = json.dumps(value, ensure_ascii=False)
    assert utf8_json(value, _dumps(value)) == expected  # the ToolBox's text reused, or not
    assert utf8_json(value) == expected


def test_utf8_json_reuses_the_ascii_text_only_without_escapes() -> None:
    assert utf8_json({"a": "x"}, '{"a": "x"}') == '{"a": "x"}'
    assert utf8_json({"a": "\u00eb"}, _dumps({"a": "\u00eb"})) == '{"a": "\u00eb"}'


@given(
    run_seed=st.integers(),
    sid=st.text(min_size=1, max_size=20).filter(lambda s: s.strip() == s and "/" not in s),
    index=st.integers(0, 10**9),
)
def test_trial_seed_is_the_derived_seed(run_seed: int, sid: str, index: int) -> None:
    scenario = Scenario.model_construct(id=sid)
    plan = TrialPlan(scenario, Cell(name="clean"), index)
    assert trial_seed(run_seed, plan) == derive_seed(run_seed, sid, "trial", index)


@given(
    st.builds(
        ModelSettings,
        model=st.text(max_size=5),
        temperature=st.floats(0, 2),
        seed=st.none() | st.integers(),
    )
)
def test_shallow_copy_is_model_copy(settings: ModelSettings) -> None:
    made, expected = shallow_copy(settings), settings.model_copy()
    assert made == expected and made is not settings
    assert made.model_fields_set == expected.model_fields_set
    assert made.__dict__ is not settings.__dict__


_SCENARIO = Scenario.model_construct(id="s2")  # all that pickling a plan needs of it


def test_a_trial_plan_is_the_frozen_dataclass_it_was() -> None:
    scenario = Scenario.model_construct(id="s1")
    plan = TrialPlan(scenario, Cell(name="clean"), 3)
    assert plan.trial_id == make_trial_id("s1", "clean", 3)
    assert (
        plan == TrialPlan(scenario, Cell(name="clean"), 3) != TrialPlan(scenario, Cell(name="x"), 3)
    )
    assert "trial_id" not in repr(plan) and "index=3" in repr(plan)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.index = 4  # type: ignore[misc]
    moved = dataclasses.replace(plan, index=4)
    assert (moved.index, moved.trial_id) == (4, "s1/clean/4")
    again = pickle.loads(pickle.dumps(TrialPlan(_SCENARIO, Cell(name="c"), 1)))
    assert again.trial_id == "s2/c/1" and again.index == 1


@given(st.floats(allow_nan=False) | st.just(0.0) | st.just(-0.0))
def test_round6_is_round(seconds: float) -> None:
    assert repr(round6(seconds)) == repr(round(seconds, 6))


def _generated(cls: type) -> type:
    """``cls``'s fields in a dataclass of the same options with the generated __init__."""
    fields = [(f.name, f.type, f) for f in dataclasses.fields(cls)]
    return dataclasses.make_dataclass(f"Generated{cls.__name__}", fields, frozen=True)


@pytest.mark.parametrize(
    ("cls", "args"),
    [
        (TrialLink, ("s/clean/1", "s", 1, 7, object(), object(), [], Usage())),
        (FailureContext, (Trajectory(),)),
        (FailureContext, (Trajectory(), AgentOutput(answer="a"), ValueError("x"), 1, 2)),
    ],
)
def test_a_frozen_seam_dataclass_is_what_its_generated_init_made(
    cls: type, args: tuple[Any, ...]
) -> None:
    made, generated = cls(*args), _generated(cls)(*args)
    names = [f.name for f in dataclasses.fields(cls)]
    assert list(vars(made)) == names and list(vars(generated)) == names
    assert [getattr(made, n) for n in names] == [getattr(generated, n) for n in names]
    assert made == cls(*args) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert repr(made).split("(", 1)[1] == repr(generated).split("(", 1)[1]
    assert cls(**dict(zip(names, args, strict=False))) == made  # by keyword too
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.trajectory = None  # type: ignore[attr-defined]


def test_a_record_made_through_the_adapter_is_the_model_s() -> None:
    fields: dict[str, Any] = {
        "run_id": "r", "trial_id": "s/clean/0", "scenario": "s", "scenario_tags": ["t"],
        "cell": "clean", "perturbations": [], "index": 0, "seed": 1, "world_seed": 2,
        "agent": "a", "model": ModelSettings(), "tool_versions": {"ping": "1"},
        "status": "passed", "root_cause": None, "error": None, "checks": [], "vetoes": [],
        "contracts": [], "answer": "ok", "trajectory": Trajectory(), "steps": 0,
        "usage": Usage(), "clock": "virtual", "sim_seconds": 0.0, "wall_seconds": 0.1,
        "started_at": datetime(2026, 1, 2, tzinfo=UTC), "channel_overhead": None,
        "injection_followed": None, "utility": None,
    }  # fmt: skip
    made, expected = _new_record(fields), TrialRecord(**fields)
    assert made == expected and made.model_fields_set == expected.model_fields_set
    assert made.model_dump_json() == expected.model_dump_json()
    with pytest.raises(ValidationError):
        _new_record({**fields, "status": "fine"})


@given(st.text(alphabet=st.sampled_from("apikey-_ bearthoizn"), max_size=30))
def test_the_credential_prefilter_is_the_four_words(lowered: str) -> None:
    words = ("authorization", "bearer", "api-key", "api_key")
    assert _may_hold_credential(lowered) == any(w in lowered for w in words)

"""A tool's argument check (tooljson._checked_args) gives what validating the arguments and
dumping the model gives, for every parameter model (its own validators, serializers, aliases
and extras included)."""

from __future__ import annotations

import enum
from datetime import date
from decimal import Decimal
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    computed_field,
    field_serializer,
    field_validator,
    model_validator,
)

from chaoseval.engine.tooljson import _checked_args
from chaoseval.model.scenario import tool


class Colour(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    ONE = 1


@tool()
def nothing(world: Any) -> dict[str, Any]:
    return {}


@tool()
def scalars(
    world: Any, order_id: str, qty: int = 1, share: float = 0.5, rush: bool = False
) -> dict[str, Any]:
    return {}


@tool()
def optional(world: Any, note: str | None = None, count: int | None = 3) -> dict[str, Any]:
    return {}


class _Defaulted(BaseModel):  # a default of another type than its field's: dumped with a warning
    model_config = ConfigDict(extra="forbid")
    qty: float = 1
    name: str = None  # type: ignore[assignment]


class _Validated(BaseModel):
    model_config = ConfigDict(extra="forbid")
    order_id: str

    @field_validator("order_id")
    @classmethod
    def _upper(cls, v: str) -> str:
        return v.upper()


class _Checked(BaseModel):
    order_id: str = "x"

    @model_validator(mode="after")
    def _fine(self) -> _Checked:
        return self


class _Serialized(BaseModel):
    order_id: str = "x"

    @field_serializer("order_id")
    def _out(self, v: str) -> str:
        return f"<{v}>"


class _Computed(BaseModel):
    order_id: str = "x"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def twice(self) -> str:
        return self.order_id * 2


class _Extra(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Aliased(BaseModel):
    model_config = ConfigDict(serialize_by_alias=True)
    order_id: str = Field("x", alias="orderId")


class _Order(BaseModel):
    order_id: str
    qty: int = 1
    when: date | None = None


class _Lenient(_Order):  # its own model_validate: called as it is
    @classmethod
    def model_validate(cls, obj: Any, **kw: Any) -> _Lenient:  # type: ignore[override]
        return super().model_validate({"order_id": "fixed"})


class _Nested(BaseModel):
    when: date | None = None
    inner: _Scalars | None = None


_Scalars = scalars.params
_Nested.model_rebuild()

MODELS = [
    nothing.params, _Scalars, optional.params, _Defaulted, _Validated, _Checked, _Serialized,
    _Computed, _Extra, _Aliased, _Nested, _Order, _Lenient,
]  # fmt: skip
NAMES = ["order_id", "qty", "share", "rush", "note", "count", "name", "when", "inner", "extra"]
VALUES = (
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4)
    | st.binary(max_size=3) | st.sampled_from([Colour.RED, Level.ONE, Decimal("1.5"), "1", "2.5"])
    | st.dates() | st.dictionaries(st.sampled_from(NAMES), st.integers() | st.text(max_size=2))
)  # fmt: skip


@given(st.sampled_from(MODELS), st.dictionaries(st.sampled_from(NAMES), VALUES, max_size=4))
def test_checked_args_are_validate_then_dump(model: type[BaseModel], args: dict[str, Any]) -> None:
    try:
        expected: Any = model.model_validate(args).model_dump(warnings=False)
    except ValidationError as exc:
        expected = ("error", exc.errors(include_url=False))
    try:
        made: Any = _checked_args(model)(args)
    except ValidationError as exc:
        made = ("error", exc.errors(include_url=False))
    # repr: NaN-safe, and types exact (1 and 1.0, True and 1, a str and a str enum differ).
    assert repr(made) == repr(expected)
    assert [type(v) for v in made] == [type(v) for v in expected]
    if isinstance(made, dict):
        assert made is not args and all(type(made[k]) is type(expected[k]) for k in made)

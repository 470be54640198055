"""Malformed tool responses: the tool ran, but what comes back is broken or subtly wrong.

Payloads are generated with hypothesis strategies from the called tool's declared result model
(``ctx.spec.returns``; a model inferred from the true result when the tool declares none), not
picked from a fixed list. The modes:

- ``truncated``: the JSON text cut off mid-body (a string)
- ``wrong_types``: one field holds a value of another JSON type
- ``missing_field``: a required field is absent
- ``renamed_field``: a required field arrives under another key (``orderId``, ``ORDER_ID``...)
- ``extra_field``: a field the schema does not declare
- ``null_value``: null where a value belongs
- ``html_error``: an HTML error page from a proxy instead of JSON (a string)
- ``empty_body``: nothing, or only whitespace (a string)
- ``oversized``: a collection envelope of ``oversize_bytes`` or more instead of the one record
- ``wrong_values``: valid per the schema, but the content differs from the truth (a different
  id, a flipped flag); not in the defaults, ask for it with ``modes=wrong_values``.

Every mode except ``wrong_values`` fails the tool's result model (``extra_field`` only when
the model forbids undeclared keys: pydantic's default ``extra="ignore"`` lets a tolerant reader
through, which is the realistic outcome). The real tool runs first, so its writes happen; only
the response is corrupted on the way back.

Reproducibility: ``SearchStrategy.example()`` cannot be seeded, so payloads are drawn with
hypothesis' public ``find(strategy, condition, random=...)`` with shrinking off. Hypothesis
always generates its simplest example first, so the condition accepts the ``skip``-th example
that satisfies the mode's own check (for instance "really fails the schema"), where ``skip``
and the ``random`` seed both come from ``ctx.rng``. Same stream, same payload, in any process.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal, TypeVar, get_args

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator

from chaoseval.model.records import RootCause
from chaoseval.model.trajectory import Fault
from chaoseval.seams.perturbation import (
    CallNext,
    CommonParams,
    FailureContext,
    Perturbation,
    PerturbationContext,
    perturbation,
)
from chaoseval.seams.rootcause import ACCEPTED_MALFORMED_DATA

Mode = Literal[
    "truncated",
    "wrong_types",
    "missing_field",
    "renamed_field",
    "extra_field",
    "null_value",
    "html_error",
    "empty_body",
    "oversized",
    "wrong_values",
]
ALL_MODES: tuple[Mode, ...] = get_args(Mode)
# Schema-valid but wrong content is a separate mode, asked for by name.
MALFORMED_MODES: tuple[Mode, ...] = tuple(m for m in ALL_MODES if m != "wrong_values")

T = TypeVar("T")

_SETTINGS = settings(
    database=None,
    phases=[Phase.generate],
    max_examples=300,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


class MalformedParams(CommonParams):
    probability: float = Field(default=0.5, ge=0, le=1, description="per-call chance to fire")
    modes: list[Mode] = Field(
        default_factory=lambda: list(MALFORMED_MODES),
        description="payload faults to draw from: " + ", ".join(ALL_MODES),
    )
    oversize_bytes: int = Field(
        default=65_536, ge=256, description="minimum size of an oversized body, bytes"
    )

    @field_validator("modes", mode="before")
    @classmethod
    def _one_mode(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v  # -p malformed:modes=html_error

    def model_post_init(self, _: Any) -> None:
        if not self.modes:
            raise ValueError("modes must name at least one fault")


@perturbation("malformed")
class Malformed(Perturbation[MalformedParams]):
    """Corrupt selected tool responses; payloads generated from the tool's result model.

    Models a buggy or degraded dependency: a proxy's HTML error page, a body cut off by a
    dropped connection, a field renamed in a new API version, a record with nulls, a filter
    ignored so the whole collection comes back.
    """

    channel = "tool"
    Params = MalformedParams
    models = "a broken response body (truncated, wrong types, renamed fields, HTML, oversized)"
    # A core cause: the tool box flags malformed results whoever breaks them.
    root_causes = (ACCEPTED_MALFORMED_DATA,)

    async def apply(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        true = await call_next(call)
        spec = ctx.spec
        model = target_model(spec.returns if spec is not None else None, true)
        modes = [m for m in sorted(set(self.params.modes)) if applicable(m, model, true)]
        if not modes:
            return true  # nothing this tool returns can be corrupted in the asked-for ways
        mode: Mode = ctx.rng.choice(modes)
        payload, detail = make_payload(mode, model, true, ctx.rng, self.params.oversize_bytes)
        ctx.fault("tool", "malformed", mode=mode, **detail)
        return payload

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        """The agent went on with the bad result: it did not call that tool again."""
        if fault.step is not None:
            tool = failure.trajectory.steps[fault.step].tool
            if any(s.tool == tool for s in failure.tool_steps_after(fault)):
                return None
        return ACCEPTED_MALFORMED_DATA


# --- drawing reproducibly -------------------------------------------------------------------


def draw(
    strategy: st.SearchStrategy[T], rng: random.Random, condition: Callable[[T], bool] = bool
) -> T:
    """One example of ``strategy`` satisfying ``condition``, determined by ``rng`` alone."""
    skip = rng.randint(1, 5)
    seed = rng.getrandbits(64)
    for wanted in (skip, 0):
        seen = 0

        def accept(value: T, wanted: int = wanted) -> bool:
            nonlocal seen
            if not condition(value):
                return False
            seen += 1
            return seen > wanted

        try:
            with _without_local_constants():
                return find(strategy, accept, settings=_SETTINGS, random=random.Random(seed))
        except NoSuchExample:
            continue  # a narrow condition: take the first example that satisfies it
    raise ValueError(f"no example of {strategy!r} satisfies the mode's condition")


@contextmanager
def _without_local_constants() -> Iterator[None]:
    """Draw without hypothesis' pool of constants scraped from the caller's loaded modules.

    Hypothesis mixes literals found in every local module in ``sys.modules`` into its draws, so
    the same seed would give another payload once some unrelated module is imported or edited.
    That pool is private API; if it moves in a later hypothesis, draws still work (and the
    cross-process test in tests/test_fault_properties.py says whether they still reproduce).
    """
    try:
        from hypothesis.internal.conjecture import providers

        empty = providers.Constants()
        original = providers._get_local_constants
        cache = providers.CONSTANTS_CACHE
    except (ImportError, AttributeError):
        yield
        return
    cache.cache.clear()  # it holds (global, local) constant pools computed with the real pool
    providers._get_local_constants = lambda: empty
    try:
        yield
    finally:
        providers._get_local_constants = original
        cache.cache.clear()


def _always(_: Any) -> bool:
    return True


# --- the target schema --------------------------------------------------------------------


def target_model(declared: type[BaseModel] | None, true: Any) -> type[BaseModel] | None:
    """The declared result model, or one inferred from the true result's JSON types."""
    if declared is not None:
        return declared
    if not isinstance(true, dict) or not true:
        return None
    fields = {k: (_json_type(v), ...) for k, v in true.items() if k.isidentifier()}
    if not fields:
        return None
    try:
        return create_model("InferredResult", **fields)  # type: ignore[call-overload]
    except Exception:
        return None


def _json_type(value: Any) -> Any:
    if value is None:
        return Any
    return type(value)


def json_keys(model: type[BaseModel]) -> dict[str, Any]:
    """JSON key -> FieldInfo, honouring aliases."""
    return {(f.alias or name): f for name, f in model.model_fields.items()}


def required_keys(model: type[BaseModel]) -> list[str]:
    return [k for k, f in json_keys(model).items() if f.is_required()]


def is_valid(model: type[BaseModel] | None, payload: Any) -> bool:
    """What chaoseval.engine.toolbox.validate_result checks: a JSON object, strict, in JSON mode."""
    if model is None:
        return isinstance(payload, dict)
    if not isinstance(payload, dict):
        return False
    try:
        model.model_validate_json(json.dumps(payload), strict=True)
    except (ValidationError, TypeError, ValueError):
        return False
    return True


def closed(model: type[BaseModel]) -> type[BaseModel]:
    """The same model, refusing undeclared keys (what ``extra_field`` is malformed against)."""
    return type(f"Closed{model.__name__}", (model,), {"model_config": ConfigDict(extra="forbid")})


def applicable(mode: Mode, model: type[BaseModel] | None, true: Any) -> bool:
    if mode in ("html_error", "empty_body"):
        return True
    if mode == "truncated":
        return len(json.dumps(true, default=str)) > 1
    if model is None or not isinstance(true, dict):
        return False
    if mode in ("missing_field", "renamed_field", "null_value", "oversized"):
        return bool(required_keys(model))
    if mode in ("wrong_types", "wrong_values"):
        return any(k in true for k in json_keys(model))
    return True  # extra_field


# --- strategies -----------------------------------------------------------------------------

_FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)
JSON_BY_TYPE: dict[str, st.SearchStrategy[Any]] = {
    "string": st.text(max_size=16),
    "integer": st.integers(min_value=-(2**40), max_value=2**40),
    "number": _FINITE,
    "boolean": st.booleans(),
    "array": st.lists(st.integers(-99, 99) | st.text(max_size=4), max_size=3),
    "object": st.dictionaries(st.text(max_size=6), st.integers(-99, 99), max_size=2),
}
JSON_VALUES = st.one_of(*JSON_BY_TYPE.values())
KEY = st.from_regex(r"[a-z][a-z0-9_]{2,14}", fullmatch=True)


def value_strategy(annotation: Any) -> st.SearchStrategy[Any]:
    """JSON values of a field's declared type."""
    simple = {str: "string", bool: "boolean", int: "integer", float: "number"}
    if annotation in simple:
        return JSON_BY_TYPE[simple[annotation]]
    try:
        return st.from_type(annotation).map(_to_json)
    except Exception:
        return JSON_VALUES


def _to_json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return json.loads(json.dumps(value, default=str))


def record_strategy(model: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {k: value_strategy(f.annotation) for k, f in json_keys(model).items()}
    )


def renamed(key: str) -> st.SearchStrategy[str]:
    parts = [p for p in re.split(r"[_\-\s]+", key) if p]
    camel = parts[0] + "".join(p.title() for p in parts[1:]) if parts else key
    variants = [camel, camel[:1].upper() + camel[1:], key.upper(), key.replace("_", "-")]
    suffix = st.text(alphabet="_0123456789abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=3)
    return st.sampled_from(variants) | suffix.map(lambda s: key + s) | st.just(key.replace("_", ""))


@st.composite
def html_page(draw_: st.DrawFn) -> str:
    status = draw_(st.sampled_from([500, 502, 503, 504]))
    reason = {500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}.get(
        status, "Gateway Timeout"
    )
    server = draw_(st.sampled_from(["nginx/1.25.3", "cloudflare", "envoy", "Apache/2.4.58"]))
    ray = draw_(st.text(alphabet="0123456789abcdef", min_size=8, max_size=16))
    return (
        "<!DOCTYPE html>\n<html><head><title>"
        f"{status} {reason}</title></head>\n<body><center><h1>{status} {reason}</h1></center>\n"
        f"<hr><center>{server}</center>\n<!-- request id: {ray} -->\n</body></html>\n"
    )


# --- the payloads ---------------------------------------------------------------------------


def make_payload(
    mode: Mode,
    model: type[BaseModel] | None,
    true: Any,
    rng: random.Random,
    oversize_bytes: int = 65_536,
) -> tuple[Any, dict[str, Any]]:
    """The corrupted response for ``mode`` and what to log about it."""
    if mode == "truncated":
        text = json.dumps(true, default=str)
        cut = draw(st.integers(1, len(text) - 1), rng, lambda i: _unparseable(text[:i]))
        return text[:cut], {"kept_bytes": cut, "of_bytes": len(text)}
    if mode == "html_error":
        return draw(html_page(), rng), {}
    if mode == "empty_body":
        return draw(st.sampled_from(["", " ", "\n", "\r\n"]), rng, _always), {}
    assert model is not None and isinstance(true, dict)
    keys = json_keys(model)
    present = [k for k in keys if k in true]
    required = required_keys(model)
    if mode == "wrong_types":
        key, value = draw(
            st.sampled_from(present).flatmap(lambda k: st.tuples(st.just(k), JSON_VALUES)),
            rng,
            lambda kv: not is_valid(model, {**true, kv[0]: kv[1]}),
        )
        return {**true, key: value}, {"field": key, "got": type(value).__name__}
    if mode == "missing_field":
        key = draw(st.sampled_from(required), rng, _always)
        return {k: v for k, v in true.items() if k != key}, {"field": key}
    if mode == "renamed_field":
        key, new = draw(
            st.sampled_from(required).flatmap(lambda k: st.tuples(st.just(k), renamed(k))),
            rng,
            lambda kn: kn[1] != kn[0] and kn[1] not in keys and kn[1] not in true,
        )
        return {(new if k == key else k): v for k, v in true.items()}, {"field": key, "as": new}
    if mode == "extra_field":
        key, value = draw(
            st.tuples(KEY, JSON_VALUES), rng, lambda kv: kv[0] not in keys and kv[0] not in true
        )
        return {**true, key: value}, {"field": key}
    if mode == "null_value":
        key = draw(st.sampled_from(required), rng, lambda k: not is_valid(model, {**true, k: None}))
        return {**true, key: None}, {"field": key}
    if mode == "oversized":
        return _oversized(model, true, rng, oversize_bytes)
    # wrong_values: valid per the schema, but not the truth
    key, value = draw(
        st.sampled_from(present).flatmap(
            lambda k: st.tuples(st.just(k), value_strategy(keys[k].annotation))
        ),
        rng,
        lambda kv: kv[1] != true[kv[0]] and is_valid(model, {**true, kv[0]: kv[1]}),
    )
    return {**true, key: value}, {"field": key}


def _oversized(
    model: type[BaseModel], true: dict[str, Any], rng: random.Random, size: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The filter was ignored: a page of the whole collection, the true record somewhere in it."""
    others = draw(st.lists(record_strategy(model), min_size=1, max_size=6), rng, _always)
    at = rng.randrange(len(others) + 1)
    items: list[Any] = []
    body = 2
    i = 0
    while body < size:
        item = true if i == at else others[i % len(others)]
        items.append(item)
        body += len(json.dumps(item, default=str)) + 2
        i += 1
    payload = {"items": items, "total": len(items), "next_cursor": f"c{rng.getrandbits(32):08x}"}
    return payload, {"bytes": len(json.dumps(payload, default=str)), "items": len(items)}


def _unparseable(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return True
    return False

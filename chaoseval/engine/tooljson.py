"""The ToolBox's JSON and validation helpers: a tool's arguments checked, its result encoded,
copied, checked against its declared model and cut to an excerpt for the record.

The encoders are made once and called without the Python frames ``json.dumps`` puts around
them: a wire tool call runs each of these once or twice (make bench: bench_wire).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticUndefined

from chaoseval import redact
from chaoseval.model.scenario import ToolSpec

EXCERPT = 2000


def _validate(model: type[BaseModel], result: Any, text: str | None = None) -> BaseModel:
    """``text``: ``result`` as JSON already (its default=str never fires on a JSON copy)."""
    if not isinstance(result, dict):
        raise TypeError(f"expected a JSON object, got {type(result).__name__}")
    # JSON mode: dates arrive as strings, as they would over the wire.
    return model.model_validate_json(json.dumps(result) if text is None else text, strict=True)


@functools.lru_cache(maxsize=4096)  # one per tool's parameter model
def _checked_args(params: type[BaseModel]) -> Callable[[Any], dict[str, Any]]:
    """``lambda args: params.model_validate(args).model_dump()``, calling pydantic-core's
    validator and serializer directly (the two methods' Python wrappers were a third of the
    time) unless the model overrides either method."""
    own_validate = params.model_validate.__func__  # type: ignore[attr-defined]
    if params.model_dump is not BaseModel.model_dump or own_validate is not _MODEL_VALIDATE:
        return lambda args: params.model_validate(args).model_dump()
    validate = params.__pydantic_validator__.validate_python
    dump = params.__pydantic_serializer__.to_python
    if not _dumped_as_is(params):
        return lambda args: dump(validate(args))
    if not params.model_fields:
        # No parameter: no arguments are {} (nothing to validate, and the dump of a model with
        # no field); any others are validated, and refused, as always.
        return lambda args: {} if not args else validate(args).__dict__.copy()
    return lambda args: validate(args).__dict__.copy()


_MODEL_VALIDATE = BaseModel.model_validate.__func__  # type: ignore[attr-defined]
_SCALARS = (str, int, float, bool)
_UNIONS = (Union, UnionType)


def _dumped_as_is(params: type[BaseModel]) -> bool:
    """Whether a valid instance's dump is its fields' values as validated (its ``__dict__``),
    as for a tool's parameters of plain scalar types (``tool()``'s models from ``str``,
    ``int``, ``float``, ``bool`` and ``| None`` signatures): the dump, a third of the check's
    cost, is then a dict copy. Anything that could make the two differ (a validator,
    serializer, computed or extra field, alias, exclusion, factory, a default of another
    type, any other annotation) keeps the dump (tests/engine/test_checked_args.py: equal)."""
    decorators = params.__pydantic_decorators__
    if (
        any(getattr(decorators, f.name) for f in dataclasses.fields(decorators))
        or params.model_post_init is not BaseModel.model_post_init
        or params.model_config.get("extra") == "allow"
        or params.model_config.get("serialize_by_alias")
        or getattr(params, "__pydantic_root_model__", False)
    ):
        return False
    for field in params.model_fields.values():
        kinds = get_args(field.annotation) if get_origin(field.annotation) in _UNIONS else ()
        if not (field.annotation in _SCALARS or (kinds and set(kinds) <= {*_SCALARS, NoneType})):
            return False
        own = field.default is PydanticUndefined or type(field.default) in (
            kinds or (field.annotation,)
        )
        if field.metadata or field.exclude or field.default_factory or field.alias or not own:
            return False
        if field.serialization_alias is not None:
            return False
    return True


def validate_result(spec: ToolSpec, result: Any) -> Any:
    """Raise ValueError when ``result`` does not match the tool's declared result model."""
    if spec.returns is None:
        return result
    try:
        _validate(spec.returns, result)
    except (ValidationError, TypeError) as exc:
        raise ValueError(f"{spec.name} returned malformed data: {_brief(exc)}") from None
    return result


def _brief(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        text = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()
        )
        return redact.head(text, 300)
    return redact.head(str(exc), 300)


# json.dumps(value, default=str) builds a new encoder per call; this one is made once.
_TEXT = json.JSONEncoder(default=str)
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


# The same C encoder without circular-reference markers: no state of its own between calls, so
# made once (a fresh one per call, with its markers, cost a third of an encoding).
_ENCODE = (
    None
    if c_make_encoder is None
    else c_make_encoder(None, str, encode_basestring_ascii, None, ": ", ", ", False, False, True)
)


def _dumps(value: Any) -> str:
    """``_TEXT.encode(value)``: the same C encoder, without the Python frames around it
    (``encode``, ``iterencode``, a closure per call): twice as fast on a small result."""
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if _ENCODE is None:  # pragma: no cover - CPython always has it
        return _TEXT.encode(value)
    try:
        return "".join(_ENCODE(value, 0))
    except RecursionError:
        # A circular value (or one nested past the recursion limit): what the encoder with
        # markers says of it, "Circular reference detected" (a ValueError), or the same error.
        return _TEXT.encode(value)


# json.dumps(value, ensure_ascii=False)'s encoder, made once (dumps with an argument builds one
# per call): the same text.
_UTF8 = json.JSONEncoder(ensure_ascii=False)


def utf8_json(value: Any, ascii_text: str | None = None) -> str:
    """``json.dumps(value, ensure_ascii=False)`` for a JSON value (not a bare string): the
    characters themselves, as a wire answer carries them. ``ascii_text``: ``json.dumps(value)``
    when it is at hand (the ToolBox's text of the result it returned). The two texts differ
    only where the ASCII one escapes a character as ``\\uXXXX`` (every character past ASCII,
    control characters in both), so without a ``\\u`` in it, it is the answer, not encoded
    again (tests/engine/test_hot_path.py)."""
    if ascii_text is not None and "\\u" not in ascii_text:
        return ascii_text
    return _UTF8.encode(value)


def _loads(text: str) -> Any:
    """``json.loads(text)`` for text :func:`_dumps` wrote (no surrounding white space): the
    scanner alone, without loads' checks (a tenth of its time on a small result)."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        end = -1
    return value if end == len(text) else json.loads(text)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return _dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _excerpt(result: Any, text: str | None = None) -> Any:
    text = _as_text(result) if text is None else text
    if len(text) <= EXCERPT:
        return result
    return redact.head(text, EXCERPT) + f"...[{len(text)} chars]"  # redacted, then cut

"""The ToolBox's JSON and validation helpers: a tool's arguments checked, its result encoded,
copied, checked against its declared model and cut to an excerpt for the record.

The encoders are made once (``json.dumps`` with an argument builds one per call): a wire tool
call runs each of these once or twice. Only json's and pydantic's public API: a private one
saved microseconds of a trial that takes a model call's seconds (issue 47).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

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
    """``lambda args: params.model_validate(args).model_dump()``: a tool's arguments as its
    parameter model validates and dumps them (its own validators and serializers included),
    through a TypeAdapter made once (half the time of the two methods' wrappers, a few percent
    of a trivial trial: make bench) unless the model overrides either method."""
    own_validate = params.model_validate.__func__  # type: ignore[attr-defined]
    if params.model_dump is not BaseModel.model_dump or own_validate is not _MODEL_VALIDATE:
        return lambda args: params.model_validate(args).model_dump()
    adapter = TypeAdapter(params)
    validate, dump = adapter.validate_python, adapter.dump_python
    return lambda args: dump(validate(args))


_MODEL_VALIDATE = BaseModel.model_validate.__func__  # type: ignore[attr-defined]


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


# json.dumps(value, default=str) builds a new encoder per call; this one is made once. A
# circular value raises json's ValueError("Circular reference detected").
_dumps: Callable[[Any], str] = json.JSONEncoder(default=str).encode
_DECODER = json.JSONDecoder()


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
    """``json.loads(text)`` for text :func:`_dumps` wrote (no surrounding white space):
    ``raw_decode``, without loads' checks around it; anything else read by loads itself, so
    its errors are loads' own."""
    try:
        value, end = _DECODER.raw_decode(text)
    except ValueError:
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
